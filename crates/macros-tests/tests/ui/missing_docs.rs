#[oxydra::tool(read_only)]
async fn echo(text: String) -> Result<String, String> {
    Ok(text)
}

fn main() {}
