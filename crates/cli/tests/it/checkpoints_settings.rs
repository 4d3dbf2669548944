//! `oxydra undo` and `oxydra sessions rewind` follow the configuration's
//! `[checkpoints]`: with `enabled = false` turns record nothing, and an undo that finds
//! no checkpoint says why, naming the setting and the file.

use crate::checkpoints::{only_session, write_notes_turn};
use crate::common;

use common::{Sandbox, stderr};

#[test]
fn with_checkpoints_off_undo_says_so_naming_the_setting_and_the_file() {
    let sandbox = Sandbox::new();
    let config = sandbox.write_trusted_config("[checkpoints]\nenabled = false\n");
    write_notes_turn(&sandbox);
    let notes = sandbox.workspace.join("notes.md");
    assert!(notes.exists());

    let output = sandbox.stored_command("undo").output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let said = stderr(&output);
    assert!(said.contains("has no checkpoint"), "{said}");
    assert!(
        said.contains("checkpoints are turned off (`[checkpoints] enabled = false` in"),
        "{said}"
    );
    assert!(said.contains(&config.display().to_string()), "{said}");
    // Nothing was touched.
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "first\n");

    // A rewind puts no file back, and says why.
    let id = only_session(&sandbox);
    let rewound = sandbox.sessions(&["rewind", &id, "--to", "1"]);
    assert_eq!(rewound.status.code(), Some(0), "{}", stderr(&rewound));
    assert!(
        stderr(&rewound).contains("checkpoints are turned off"),
        "{}",
        stderr(&rewound)
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "first\n");
}

#[test]
fn with_checkpoints_on_the_same_turn_is_undone() {
    let sandbox = Sandbox::new();
    sandbox.write_trusted_config("[checkpoints]\nenabled = true\nkeep_last = 3\n");
    write_notes_turn(&sandbox);
    let output = sandbox.stored_command("undo").output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!sandbox.workspace.join("notes.md").exists());
}
