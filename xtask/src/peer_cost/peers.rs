//! The sides of `peer-cost`: `oxydra run` and the peers, each a crate of its own under
//! `bench/` (outside the workspace, its own lock file), and how they are built.

use std::path::{Path, PathBuf};

use super::measure::Side;

/// A Rust agent framework's peer crate.
pub(crate) struct Peer {
    /// The name `--peers` takes.
    pub name: &'static str,
    /// The table's label: the framework and its version.
    pub label: &'static str,
    /// What it does on the scenario, for the table.
    pub what: &'static str,
    /// Its crate, relative to the workspace root; the binary has the crate's name.
    pub dir: &'static str,
}

/// Every peer, in the table's order.
pub(crate) const PEERS: [Peer; 3] = [
    Peer {
        name: "rig",
        label: "rig 0.44",
        what: "streams, no persistence, sequential tools",
        dir: "bench/peer-rig",
    },
    Peer {
        name: "autoagents",
        label: "AutoAgents 0.4",
        what: "whole replies, in-memory window, sequential tools",
        dir: "bench/peer-autoagents",
    },
    Peer {
        name: "adk",
        label: "ADK-Rust 2.3",
        what: "streams, in-memory session, sequential tools",
        dir: "bench/peer-adk",
    },
];

impl Peer {
    /// The crate's (and binary's) name: the last part of its directory.
    fn crate_name(&self) -> &'static str {
        self.dir.rsplit('/').next().unwrap_or(self.dir)
    }

    /// Its own target directory under the workspace's.
    fn target(&self, target: &Path) -> PathBuf {
        target.join(self.crate_name())
    }

    /// Its release binary.
    pub(crate) fn binary(&self, target: &Path) -> PathBuf {
        self.target(target).join("release").join(self.crate_name())
    }

    /// Builds it in release from its own lock file.
    pub(crate) fn build(&self, root: &Path, target: &Path) -> Result<(), String> {
        let manifest = root.join(self.dir).join("Cargo.toml");
        super::cargo(
            root,
            &[
                "build",
                "--release",
                "--locked",
                "--manifest-path",
                &manifest.display().to_string(),
                "--target-dir",
                &self.target(target).display().to_string(),
            ],
        )
    }

    /// The side that runs it: `BINARY URL WORKSPACE PROMPT`.
    pub(crate) fn side(&self, target: &Path, workspace: &str, prompt: &str) -> Side {
        Side {
            label: self.label.to_owned(),
            what: self.what.to_owned(),
            command: vec![
                self.binary(target).display().to_string(),
                "{url}".into(),
                workspace.to_owned(),
                prompt.to_owned(),
            ],
        }
    }
}

/// The peers `--peers a,b` names, in the table's order; every peer without it.
pub(crate) fn select(names: Option<&str>) -> Result<Vec<&'static Peer>, String> {
    let Some(names) = names else {
        return Ok(PEERS.iter().collect());
    };
    let wanted: Vec<&str> = names.split(',').map(str::trim).collect();
    if let Some(unknown) = wanted
        .iter()
        .find(|name| !PEERS.iter().any(|peer| peer.name == **name))
    {
        let known: Vec<&str> = PEERS.iter().map(|peer| peer.name).collect();
        return Err(format!(
            "--peers: no peer named {unknown:?} (there are {})",
            known.join(", ")
        ));
    }
    Ok(PEERS
        .iter()
        .filter(|peer| wanted.contains(&peer.name))
        .collect())
}

/// The side that runs `oxydra run` on the scenario, its state in `{state}`.
pub(crate) fn oxydra_side(oxydra: &Path, workspace: &str, prompt: &str) -> Side {
    Side {
        label: "oxydra run".into(),
        what: "streams, persists, scrubs, reads in parallel".into(),
        command: vec![
            oxydra.display().to_string(),
            "run".into(),
            "--base-url".into(),
            "{url}".into(),
            "--output".into(),
            "jsonl".into(),
            "--max-turns".into(),
            "25".into(),
            "--db".into(),
            "{state}/oxydra.db".into(),
            "--workspace".into(),
            workspace.to_owned(),
            prompt.to_owned(),
        ],
    }
}

/// Builds `oxydra`, the scenario server and the `peers`, all in release.
pub(crate) fn build_all(root: &Path, target: &Path, peers: &[&Peer]) -> Result<(), String> {
    super::build_bin(root, "oxydra-cli", "oxydra", true)?;
    super::build_bin(root, "oxydra-test-support", "scenario_server", true)?;
    peers.iter().try_for_each(|peer| peer.build(root, target))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_peer_by_default_and_a_named_few_in_table_order() {
        let all: Vec<&str> = select(None).unwrap().iter().map(|p| p.name).collect();
        assert_eq!(all, ["rig", "autoagents", "adk"]);
        let few: Vec<&str> = select(Some("adk, rig"))
            .unwrap()
            .iter()
            .map(|p| p.name)
            .collect();
        assert_eq!(few, ["rig", "adk"]);
    }

    #[test]
    fn an_unknown_peer_is_named_with_the_known_ones() {
        let error = select(Some("rig,langchain")).err().unwrap();
        assert!(error.contains("\"langchain\""), "{error}");
        assert!(error.contains("rig, autoagents, adk"), "{error}");
    }

    #[test]
    fn each_peer_runs_its_own_release_binary_with_the_shared_arguments() {
        let target = Path::new("/t");
        let side = PEERS[2].side(target, "/w", "go");
        assert_eq!(
            side.command,
            ["/t/peer-adk/release/peer-adk", "{url}", "/w", "go"]
        );
        for peer in &PEERS {
            assert!(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("..")
                    .join(peer.dir)
                    .join("Cargo.lock")
                    .is_file(),
                "{} has no lock file",
                peer.dir
            );
        }
    }
}
