/// Adds.
#[oxydra::tool(read_only)]
fn add(a: i64, b: i64) -> Result<i64, String> {
    Ok(a + b)
}

fn main() {}
