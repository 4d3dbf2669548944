/// Deletes a file.
#[oxydra::tool(read_only, side_effecting)]
async fn delete(path: String) -> Result<String, String> {
    Ok(path)
}

fn main() {}
