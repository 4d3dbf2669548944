/// Echoes.
#[oxydra::tool(read_only)]
async fn echo(text: String) -> String {
    text
}

fn main() {}
