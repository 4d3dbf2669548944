/// Saves a note.
#[oxydra::tool(side_effecting, consent = "forever")]
async fn save_note(text: String) -> Result<String, std::convert::Infallible> {
    Ok(text)
}

fn main() {}
