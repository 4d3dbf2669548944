/// Deletes a file.
#[oxydra::tool]
async fn delete(path: String) -> Result<String, String> {
    Ok(path)
}

fn main() {}
