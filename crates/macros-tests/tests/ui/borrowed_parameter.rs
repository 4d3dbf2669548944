/// Echoes.
#[oxydra::tool(read_only)]
async fn echo(text: &str) -> Result<String, String> {
    Ok(text.to_owned())
}

fn main() {}
