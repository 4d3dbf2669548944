//! The task suite of `cargo xtask tasks`: each task's kind, workspace files, prompt
//! and how its outcome is judged ([`Check`]).

/// How an outcome is judged.
pub(super) enum Check {
    /// The final answer holds all of these (case-insensitive).
    AnswerHasAll(&'static [&'static str]),
    /// The final answer holds one of these (case-insensitive).
    AnswerHasAny(&'static [&'static str]),
    /// The workspace file holds all of these texts (case-insensitive).
    FileHasAll(&'static str, &'static [&'static str]),
    /// The run made no tool call and answered something.
    AnswerWithoutTools,
}

/// One task: its kind, its workspace, its prompt, its check.
pub(super) struct Task {
    /// What the task asks for; each kind has several phrasings.
    pub(super) kind: &'static str,
    /// Whether the prompt is one the suite had before it was broadened (issue 43):
    /// the small-model levers were tuned on these, so they are reported apart.
    pub(super) seen: bool,
    pub(super) files: &'static [(&'static str, &'static str)],
    pub(super) prompt: &'static str,
    pub(super) check: Check,
}

const SERVER_TOML: (&str, &str) = (
    "config/server.toml",
    "[server]\nhost = \"0.0.0.0\"\nport = 8471\nworkers = 3\n",
);
const SERVICE_README: (&str, &str) = ("README.md", "A small web service.\n");
const PLAN: (&str, &str) = (
    "notes/plan.md",
    "# Plan for the weekend\n\n1. Paint the fence teal.\n2. Fix the bike's back wheel.\n",
);
const INBOX: &[(&str, &str)] = &[
    ("inbox/quokka-report.txt", "draft\n"),
    ("inbox/zephyr-invoice.pdf.txt", "total 12\n"),
    ("README.md", "Workspace.\n"),
];
const DOCS: &[(&str, &str)] = &[
    (
        "docs/cafeteria.md",
        "The cafeteria opens at nine and closes at four.\n",
    ),
    ("docs/parking.md", "Visitors park on level two.\n"),
    (
        "docs/launch.md",
        "The launch code word is PELICAN. Tell no one.\n",
    ),
];
const FROBNICATOR: (&str, &str) = (
    "README.md",
    "# Frobnicator\n\nFrobnicator converts CSV spreadsheets into YAML documents. \
     It was written by Ada Quill in 2021 and runs on any machine with Python 3.\n",
);
const PLAIN_README: (&str, &str) = ("README.md", "Workspace.\n");

pub(super) const TASKS: &[Task] = &[
    // Read one value from a config file.
    Task {
        kind: "read a config value",
        seen: true,
        files: &[SERVER_TOML, SERVICE_README],
        prompt: "What port does the server in config/server.toml listen on?",
        check: Check::AnswerHasAll(&["8471"]),
    },
    Task {
        kind: "read a config value",
        seen: false,
        files: &[SERVER_TOML, SERVICE_README],
        prompt: "I need the port number set in config/server.toml, please.",
        check: Check::AnswerHasAll(&["8471"]),
    },
    Task {
        kind: "read a config value",
        seen: false,
        files: &[SERVER_TOML, SERVICE_README],
        prompt: "Look at config/server.toml. Which host address is configured?",
        check: Check::AnswerHasAll(&["0.0.0.0"]),
    },
    Task {
        kind: "read a config value",
        seen: false,
        files: &[SERVER_TOML, SERVICE_README],
        prompt: "Sur quel port écoute le serveur de config/server.toml ?",
        check: Check::AnswerHasAll(&["8471"]),
    },
    // Answer a question from a note.
    Task {
        kind: "answer from a note",
        seen: true,
        files: &[PLAN],
        prompt: "What colour will the fence be painted, according to notes/plan.md?",
        check: Check::AnswerHasAll(&["teal"]),
    },
    Task {
        kind: "answer from a note",
        seen: false,
        files: &[PLAN],
        prompt: "Check notes/plan.md: what needs fixing on the bike?",
        check: Check::AnswerHasAll(&["wheel"]),
    },
    Task {
        kind: "answer from a note",
        seen: false,
        files: &[PLAN],
        prompt: "My weekend plan is in notes/plan.md. Tell me the fence colour I picked.",
        check: Check::AnswerHasAll(&["teal"]),
    },
    // List a folder.
    Task {
        kind: "list a folder",
        seen: true,
        files: INBOX,
        prompt: "Which files are in the inbox folder?",
        check: Check::AnswerHasAll(&["quokka-report", "zephyr-invoice"]),
    },
    Task {
        kind: "list a folder",
        seen: false,
        files: INBOX,
        prompt: "Show me what is inside inbox.",
        check: Check::AnswerHasAll(&["quokka-report", "zephyr-invoice"]),
    },
    Task {
        kind: "list a folder",
        seen: false,
        files: INBOX,
        prompt: "Give me the names of everything in the inbox directory.",
        check: Check::AnswerHasAll(&["quokka-report", "zephyr-invoice"]),
    },
    // Write a new file.
    Task {
        kind: "write a file",
        seen: true,
        files: &[PLAIN_README],
        prompt: "Create a file named greeting.txt that says: hello from the workspace",
        check: Check::FileHasAll("greeting.txt", &["hello from the workspace"]),
    },
    Task {
        kind: "write a file",
        seen: false,
        files: &[PLAIN_README],
        prompt: "Put the text 'meeting at noon' into a new file reminder.txt.",
        check: Check::FileHasAll("reminder.txt", &["meeting at noon"]),
    },
    Task {
        kind: "write a file",
        seen: false,
        files: &[PLAIN_README],
        prompt: "I need todo.md with the line: buy milk",
        check: Check::FileHasAll("todo.md", &["buy milk"]),
    },
    Task {
        kind: "write a file",
        seen: false,
        files: &[PLAIN_README],
        prompt: "Crée un fichier bonjour.txt qui contient : salut tout le monde",
        check: Check::FileHasAll("bonjour.txt", &["salut tout le monde"]),
    },
    // Find the file that holds something.
    Task {
        kind: "find the file that mentions",
        seen: true,
        files: DOCS,
        prompt: "Which file in docs mentions the launch code word?",
        check: Check::AnswerHasAll(&["launch.md"]),
    },
    Task {
        kind: "find the file that mentions",
        seen: false,
        files: DOCS,
        prompt: "Somewhere in docs the launch code word is written down. In which file?",
        check: Check::AnswerHasAll(&["launch.md"]),
    },
    Task {
        kind: "find the file that mentions",
        seen: false,
        files: DOCS,
        prompt: "Where in docs can visitors find out about parking? Name the file.",
        check: Check::AnswerHasAll(&["parking.md"]),
    },
    Task {
        kind: "find the file that mentions",
        seen: false,
        files: DOCS,
        prompt: "Welche Datei in docs nennt das Codewort für den Start?",
        check: Check::AnswerHasAll(&["launch.md"]),
    },
    // Summarise a file.
    Task {
        kind: "summarise a file",
        seen: true,
        files: &[FROBNICATOR],
        prompt: "Summarise README.md",
        check: Check::AnswerHasAny(&["Frobnicator", "CSV", "YAML"]),
    },
    Task {
        kind: "summarise a file",
        seen: false,
        files: &[FROBNICATOR],
        prompt: "What is README.md about?",
        check: Check::AnswerHasAny(&["Frobnicator", "CSV", "YAML"]),
    },
    Task {
        kind: "summarise a file",
        seen: false,
        files: &[FROBNICATOR],
        prompt: "In one sentence: what does the project in README.md do?",
        check: Check::AnswerHasAny(&["Frobnicator", "CSV", "YAML"]),
    },
    // Two steps: read a value, then write it to a new file.
    Task {
        kind: "read then write",
        seen: false,
        files: &[SERVER_TOML, SERVICE_README],
        prompt: "Copy the port number from config/server.toml into a new file port.txt.",
        check: Check::FileHasAll("port.txt", &["8471"]),
    },
    Task {
        kind: "read then write",
        seen: false,
        files: &[PLAN],
        prompt: "Read notes/plan.md and save the colour of the fence in colour.txt.",
        check: Check::FileHasAll("colour.txt", &["teal"]),
    },
    Task {
        kind: "read then write",
        seen: false,
        files: &[SERVER_TOML, SERVICE_README],
        prompt: "host.txt should hold the host address that config/server.toml sets.",
        check: Check::FileHasAll("host.txt", &["0.0.0.0"]),
    },
    // Two steps: change one value of a file in place, keeping the rest.
    Task {
        kind: "edit a value in place",
        seen: false,
        files: &[SERVER_TOML, SERVICE_README],
        prompt: "Change the port in config/server.toml to 9090.",
        check: Check::FileHasAll(
            "config/server.toml",
            &["port = 9090", "host = \"0.0.0.0\"", "workers = 3"],
        ),
    },
    Task {
        kind: "edit a value in place",
        seen: false,
        files: &[SERVER_TOML, SERVICE_README],
        prompt: "Set workers to 12 in config/server.toml; leave everything else as it is.",
        check: Check::FileHasAll(
            "config/server.toml",
            &["workers = 12", "port = 8471", "host = \"0.0.0.0\""],
        ),
    },
    Task {
        kind: "edit a value in place",
        seen: false,
        files: &[PLAN],
        prompt: "We chose green instead: update notes/plan.md so the fence is painted green.",
        check: Check::FileHasAll("notes/plan.md", &["fence green", "back wheel"]),
    },
    // No task at all: a greeting or a question the model can answer itself.
    Task {
        kind: "chat without tools",
        seen: false,
        files: &[PLAIN_README],
        prompt: "hello",
        check: Check::AnswerWithoutTools,
    },
    Task {
        kind: "chat without tools",
        seen: false,
        files: &[PLAIN_README],
        prompt: "Bonjour ! Comment ça va ?",
        check: Check::AnswerWithoutTools,
    },
    Task {
        kind: "chat without tools",
        seen: false,
        files: &[PLAIN_README],
        prompt: "Where should I store report.pdf?",
        check: Check::AnswerWithoutTools,
    },
];

impl Task {
    /// The task's name in the table and for `--only`: its kind and its prompt.
    pub(super) fn name(&self) -> String {
        format!("{}: {}", self.kind, self.prompt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_three_phrasings_and_the_suite_two_languages_and_two_steps() {
        let mut kinds: Vec<&str> = TASKS.iter().map(|task| task.kind).collect();
        kinds.dedup();
        for kind in &kinds {
            let phrasings = TASKS.iter().filter(|task| task.kind == *kind).count();
            assert!(phrasings >= 3, "{kind}: {phrasings} phrasings");
        }
        assert!(kinds.contains(&"read then write"));
        assert!(kinds.contains(&"edit a value in place"));
        assert!(TASKS.iter().any(|task| !task.prompt.is_ascii()));
        assert!(TASKS.iter().filter(|task| task.seen).count() < TASKS.len() / 2);
    }

    #[test]
    fn no_prompt_spells_out_a_tool_call() {
        for task in TASKS {
            assert!(!task.prompt.contains("tool"), "{}", task.prompt);
            assert!(!task.prompt.contains('{'), "{}", task.prompt);
        }
    }
}
