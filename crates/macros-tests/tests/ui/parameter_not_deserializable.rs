struct Handle;

/// Uses a handle.
#[oxydra::tool(read_only)]
async fn use_handle(handle: Handle) -> Result<String, String> {
    let _ = handle;
    Ok(String::new())
}

fn main() {}
