//! Asking a person before a protected write: what they are asked, and never for
//! Oxydra's own files.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::ws;
use crate::call_preview::CallPreview;
use crate::protected::{ProtectedPaths, ProtectedWrite, ProtectedWriteConsent};

/// A person who answers from a script and records what was asked.
struct Person {
    answer: bool,
    asked: Mutex<Vec<ProtectedWrite>>,
}

#[async_trait]
impl ProtectedWriteConsent for Person {
    async fn allow(&self, write: &ProtectedWrite) -> bool {
        self.asked.lock().unwrap().push(write.clone());
        self.answer
    }
}

#[tokio::test]
async fn with_consent_a_person_is_asked_why_but_never_for_own_files() {
    let w = ws();
    for answer in [true, false] {
        let person = Arc::new(Person {
            answer,
            asked: Mutex::new(Vec::new()),
        });
        let protected = ProtectedPaths::default()
            .with_consent(Arc::clone(&person) as Arc<dyn ProtectedWriteConsent>);
        let previews = AtomicUsize::new(0);
        let preview = || {
            previews.fetch_add(1, Ordering::SeqCst);
            CallPreview::Fetch {
                url: "the change".into(),
            }
        };
        let resolved = w.policy.resolve(".git/hooks/pre-commit").unwrap();
        let result = protected
            .authorize_write(
                "file_write",
                &w.root,
                ".git/hooks/pre-commit",
                &resolved,
                preview,
            )
            .await;
        assert_eq!(result.is_ok(), answer, "{result:?}");
        if let Err(err) = result {
            assert!(err.to_string().contains("the person declined"), "{err}");
        }
        let resolved = w.policy.resolve("oxydra.toml").unwrap();
        let err = protected
            .authorize_write("file_write", &w.root, "oxydra.toml", &resolved, preview)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("own configuration"), "{err}");
        let resolved = w.policy.resolve("notes.md").unwrap();
        protected
            .authorize_write("file_write", &w.root, "notes.md", &resolved, preview)
            .await
            .unwrap();
        // The preview is made only for the question that is asked.
        assert_eq!(previews.load(Ordering::SeqCst), 1);
        let asked = person.asked.lock().unwrap();
        assert_eq!(asked.len(), 1, "only the hook was asked about");
        assert_eq!(asked[0].tool, "file_write");
        assert_eq!(
            asked[0].preview,
            CallPreview::Fetch {
                url: "the change".into()
            }
        );
        assert!(
            asked[0]
                .reason
                .starts_with("`.git/hooks/pre-commit` is in `.git`, which git loads and runs"),
            "{}",
            asked[0].reason
        );
    }
}
