/// Counts.
#[oxydra::tool(read_only)]
async fn count(text: String) -> Result<Vec<u8>, String> {
    Ok(text.into_bytes())
}

fn main() {}
