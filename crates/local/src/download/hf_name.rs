//! `OWNER/REPO/FILE.gguf`: a model file in a Hugging Face repository.

use std::path::PathBuf;

use crate::error::LocalError;

/// A parsed `hf:` model name: where the file is on the hub and where it is kept.
///
/// ```
/// use std::path::PathBuf;
/// use oxydra_local::HfName;
///
/// let name = HfName::parse("o/r/q4/m.gguf")?;
/// assert_eq!(name.relative_path(), PathBuf::from("o/r/q4/m.gguf"));
/// assert_eq!(name.url("https://huggingface.co"), "https://huggingface.co/o/r/resolve/main/q4/m.gguf");
/// assert!(HfName::parse("o/../x.gguf").is_err());
/// # Ok::<(), oxydra_local::LocalError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HfName {
    owner: String,
    repo: String,
    file: Vec<String>,
}

impl HfName {
    /// Parses `OWNER/REPO/FILE.gguf` (the file may sit in folders). Every part is
    /// letters, digits, `.`, `_` or `-`, and none is `.` or `..`, so the name can
    /// neither leave the models directory nor change the URL's meaning.
    ///
    /// # Errors
    /// [`LocalError::ModelName`], saying which part is wrong.
    pub fn parse(name: &str) -> Result<Self, LocalError> {
        let invalid = |message: String| LocalError::ModelName { message };
        let parts: Vec<&str> = name.split('/').collect();
        let [owner, repo, file @ ..] = parts.as_slice() else {
            return Err(invalid(format!(
                "`hf:{name}`: expected hf:OWNER/REPO/FILE.gguf"
            )));
        };
        if file.is_empty() {
            return Err(invalid(format!(
                "`hf:{name}`: expected hf:OWNER/REPO/FILE.gguf"
            )));
        }
        for part in parts.iter() {
            let valid = !part.is_empty()
                && *part != "."
                && *part != ".."
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
            if !valid {
                return Err(invalid(format!(
                    "`hf:{name}`: `{part}` is not a valid name (letters, digits, . _ -)"
                )));
            }
        }
        if !name.to_ascii_lowercase().ends_with(".gguf") {
            return Err(invalid(format!(
                "`hf:{name}`: the file must be a .gguf model"
            )));
        }
        Ok(Self {
            owner: (*owner).to_owned(),
            repo: (*repo).to_owned(),
            file: file.iter().map(|part| (*part).to_owned()).collect(),
        })
    }

    /// Where the file is kept, below the models directory's `hf/`.
    pub fn relative_path(&self) -> PathBuf {
        let mut path = PathBuf::from(&self.owner);
        path.push(&self.repo);
        for part in &self.file {
            path.push(part);
        }
        path
    }

    /// The download URL at `endpoint`.
    pub fn url(&self, endpoint: &str) -> String {
        format!(
            "{}/{}/{}/resolve/main/{}",
            endpoint.trim_end_matches('/'),
            self.owner,
            self.repo,
            self.file.join("/")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_owner_repo_and_file() {
        let name =
            HfName::parse("bartowski/SmolLM2-135M-Instruct-GGUF/SmolLM2-135M-Instruct-Q4_K_M.gguf")
                .unwrap();
        assert_eq!(
            name.url("http://h/"),
            "http://h/bartowski/SmolLM2-135M-Instruct-GGUF/resolve/main/SmolLM2-135M-Instruct-Q4_K_M.gguf"
        );
        assert_eq!(
            name.relative_path(),
            PathBuf::from("bartowski/SmolLM2-135M-Instruct-GGUF/SmolLM2-135M-Instruct-Q4_K_M.gguf")
        );
        let nested = HfName::parse("o/r/q4/m.gguf").unwrap();
        assert_eq!(nested.relative_path(), PathBuf::from("o/r/q4/m.gguf"));
    }

    #[test]
    fn rejects_names_that_escape_or_are_not_models() {
        for bad in [
            "o/r",
            "o/r/",
            "o/../x.gguf",
            "../r/x.gguf",
            "o/r/../../x.gguf",
            "o/r/./x.gguf",
            "o/r/x.bin",
            "o/r/x y.gguf",
            "o/r/x.gguf?download=1",
            "o/r/%2e%2e.gguf",
            "/o/r/x.gguf",
            "o//x.gguf",
        ] {
            assert!(HfName::parse(bad).is_err(), "{bad} was accepted");
        }
    }
}
