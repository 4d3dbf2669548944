//! `oxydra trust [FILE] | --revoke [FILE] | --list`: the project configuration files
//! whose settings that grant power apply.

use std::io::Write;
use std::path::{Path, PathBuf};

use oxydra::tools::CONFIG_FILE_NAME;

use crate::args::TrustArgs;
use crate::config::trust::{TrustStore, Verdict, default_store_path, key_of, sha256_hex};
use crate::config::{launched_hashes, parse, strip_powers};
use crate::error::CliError;
use crate::exit_code::Exit;

/// Runs `oxydra trust`.
pub fn run(args: &TrustArgs) -> Result<Exit, CliError> {
    let store_path = default_store_path().ok_or_else(|| {
        CliError::Setup("no user data directory is known, so no trust store can be kept".into())
    })?;
    let mut store = TrustStore::open(&store_path)?;
    let text = if args.list {
        list(&store)
    } else {
        let file = args
            .file
            .clone()
            .or_else(|| oxydra_config::project_file(std::path::Path::new(".")))
            .unwrap_or_else(|| PathBuf::from(CONFIG_FILE_NAME));
        if args.revoke {
            revoke(&mut store, &file)?
        } else {
            trust(&mut store, &file)?
        }
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(CliError::stdout)?;
    Ok(Exit::Done)
}

/// Trusts `file` as it is now; it must be a valid configuration file.
fn trust(store: &mut TrustStore, file: &Path) -> Result<String, CliError> {
    let text = std::fs::read_to_string(file).map_err(|source| CliError::ReadFile {
        path: file.to_path_buf(),
        source,
    })?;
    let key = key_of(file);
    let config = parse(&key, &text)?;
    let launched = launched_hashes(&config, &key);
    // What an untrusted copy of the file could not set: what trusting it grants.
    let table: toml::Table = text.parse().map_err(|error: toml::de::Error| {
        CliError::Setup(format!("{}: {}", key.display(), error.message()))
    })?;
    let (_, powers) = strip_powers(table);
    store.trust(&key, text.as_bytes(), &launched);
    store.save()?;
    let hash = sha256_hex(text.as_bytes());
    let short = hash.get(..12).unwrap_or(&hash);
    let granted = if powers.is_empty() {
        "It holds no settings that grant power.".to_owned()
    } else {
        format!(
            "Its settings that grant power now apply: {}.",
            oxydra_config::listed_ignored(&powers)
        )
    };
    let runs: String = launched
        .iter()
        .map(|(path, hash)| match hash {
            Some(hash) => format!(
                "It runs {} (sha256 {}…): a change to it untrusts the file too.\n",
                path.display(),
                hash.get(..12).unwrap_or(hash)
            ),
            None => format!(
                "It runs {}, which cannot be read: the file stays untrusted until it can.\n",
                path.display()
            ),
        })
        .collect();
    Ok(format!(
        "trusted {} (sha256 {short}…); any change to it untrusts it.\n{granted}\n{runs}",
        key.display()
    ))
}

/// Forgets `file`.
fn revoke(store: &mut TrustStore, file: &Path) -> Result<String, CliError> {
    let key = key_of(file);
    if store.revoke(&key) {
        store.save()?;
        Ok(format!(
            "revoked {}: its settings that grant power are ignored from now on.\n",
            key.display()
        ))
    } else {
        Ok(format!("{} was not trusted.\n", key.display()))
    }
}

/// One line per trusted file: `trusted`, `changed` (edited since) or `missing`.
fn list(store: &TrustStore) -> String {
    if store.entries().is_empty() {
        return format!(
            "no trusted configuration files (store: {})\n",
            store.path().display()
        );
    }
    store
        .entries()
        .iter()
        .map(|entry| {
            let state = match std::fs::read(&entry.path) {
                Err(_) => "missing",
                Ok(content) => {
                    let launched = String::from_utf8(content.clone())
                        .ok()
                        .and_then(|text| parse(&entry.path, &text).ok())
                        .map(|config| launched_hashes(&config, &entry.path))
                        .unwrap_or_default();
                    match store.verdict(&entry.path, &content, &launched) {
                        Verdict::Trusted => "trusted",
                        Verdict::Changed | Verdict::LaunchedChanged(_) | Verdict::Untrusted => {
                            "changed"
                        }
                    }
                }
            };
            format!("{state:<8} {}\n", entry.path.display())
        })
        .collect()
}
