//! `#[tool(consent = "...")]` declares the consent a tool needs with the tool, as the
//! executor's `PermissionScope`; without it a tool declares none.

use oxydra::tools::{PermissionScope, Tool};

/// Saves a note.
#[oxydra::tool(side_effecting, consent = "session")]
async fn save_note(text: String) -> Result<String, std::convert::Infallible> {
    Ok(text)
}

/// Deletes a note.
#[oxydra::tool(privileged, consent = "arguments", name = "delete_note")]
async fn remove(path: String) -> Result<String, std::convert::Infallible> {
    Ok(path)
}

/// Reads a note.
#[oxydra::tool(read_only)]
async fn read_note(path: String) -> Result<String, std::convert::Infallible> {
    Ok(path)
}

#[test]
fn consent_is_declared_with_the_tool() {
    assert_eq!(SaveNote.consent(), Some(PermissionScope::Session));
    assert_eq!(Remove.consent(), Some(PermissionScope::Arguments));
    assert_eq!(ReadNote.consent(), None);
}
