struct Opaque;

/// Echoes.
#[oxydra::tool(read_only)]
async fn echo(text: String) -> Result<String, Opaque> {
    Ok(text)
}

fn main() {}
