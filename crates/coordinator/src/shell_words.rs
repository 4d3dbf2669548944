//! Parameters inside a shell command template stay data.
//!
//! A deterministic step's `shell_exec` command may contain `{{name}}` placeholders.
//! No value is ever written into the command: each placeholder becomes the quoted
//! positional parameter `"$N"` and the value is passed beside the command
//! (`sh -c COMMAND sh VALUE…`), so no shell parses it. `"$N"` is one literal word only
//! where the shell reads it as a plain word, so at load a placeholder must stand where
//! a plain word may: not inside `'…'`, `"…"` or backquotes, not in a comment, not
//! after a here-document operator (`<<`), not inside `${…}` or arithmetic (`$((…))`,
//! `((…))`), and not right after `\` or `$`. Anything else is refused, naming the
//! placeholder. [`could_run_in_arithmetic`] covers the one way a shell still
//! evaluates a value it was given as data.

/// Where a placeholder sits in the command, when that is a place it may not be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnsafeSpot {
    /// Inside `'…'`.
    SingleQuotes,
    /// Inside `"…"`.
    DoubleQuotes,
    /// Inside backquotes.
    Backquotes,
    /// In a `#` comment.
    Comment,
    /// After `<<` (in or before a here-document body).
    HereDocument,
    /// Inside `${…}` or arithmetic.
    Expansion,
    /// Right after `\` or `$`.
    AfterEscape,
    /// After a command substitution inside double quotes, which this check does not
    /// follow.
    Unfollowed,
}

impl UnsafeSpot {
    /// What the spot is, for an error message.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Self::SingleQuotes => "inside single quotes",
            Self::DoubleQuotes => "inside double quotes",
            Self::Backquotes => "inside backquotes",
            Self::Comment => "in a comment",
            Self::HereDocument => "after a here-document operator `<<`",
            Self::Expansion => "inside `${…}` or an arithmetic expression",
            Self::AfterEscape => "right after `\\` or `$`",
            Self::Unfollowed => "after a command substitution inside double quotes",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Plain,
    Single,
    Double,
    Backquote,
    Comment,
}

/// Follows a command template's literal text, piece by piece, to tell whether the
/// point between two pieces is a plain word position.
#[derive(Debug, Clone)]
pub(crate) struct ShellScan {
    state: State,
    escaped: bool,
    word_start: bool,
    previous: Option<char>,
    heredoc: bool,
    braces: usize,
    arithmetic: usize,
    unfollowed: bool,
}

impl Default for ShellScan {
    fn default() -> Self {
        Self {
            state: State::Plain,
            escaped: false,
            word_start: true,
            previous: None,
            heredoc: false,
            braces: 0,
            arithmetic: 0,
            unfollowed: false,
        }
    }
}

impl ShellScan {
    /// Reads literal text of the command.
    pub(crate) fn feed(&mut self, text: &str) {
        for c in text.chars() {
            self.step(c);
            self.previous = Some(c);
        }
    }

    fn step(&mut self, c: char) {
        if self.escaped {
            self.escaped = false;
            self.word_start = false;
            return;
        }
        match self.state {
            State::Single => {
                if c == '\'' {
                    self.state = State::Plain;
                }
            }
            State::Double => match c {
                '\\' => self.escaped = true,
                '"' => self.state = State::Plain,
                '(' if self.previous == Some('$') => self.unfollowed = true,
                '`' => self.unfollowed = true,
                _ => {}
            },
            State::Backquote => match c {
                '\\' => self.escaped = true,
                '`' => self.state = State::Plain,
                _ => {}
            },
            State::Comment => {
                if c == '\n' {
                    self.state = State::Plain;
                    self.word_start = true;
                }
            }
            State::Plain => self.plain(c),
        }
    }

    fn plain(&mut self, c: char) {
        let starts_word = self.word_start;
        self.word_start = false;
        match c {
            '\\' => self.escaped = true,
            '\'' => self.state = State::Single,
            '"' => self.state = State::Double,
            '`' => self.state = State::Backquote,
            '#' if starts_word => self.state = State::Comment,
            '<' if self.previous == Some('<') => self.heredoc = true,
            '{' if self.previous == Some('$') => self.braces += 1,
            '}' if self.braces > 0 => self.braces -= 1,
            '(' if self.previous == Some('(') => self.arithmetic += 1,
            ')' if self.previous == Some(')') && self.arithmetic > 0 => self.arithmetic -= 1,
            c if c.is_whitespace() || matches!(c, ';' | '&' | '|' | '(' | ')') => {
                self.word_start = true;
            }
            _ => {}
        }
    }

    /// Takes a placeholder at the current point: `Err` when its value could be read as
    /// anything but a quoted word there. Afterwards the scan is inside that word.
    pub(crate) fn placeholder(&mut self) -> Result<(), UnsafeSpot> {
        let spot = match self.state {
            State::Single => Some(UnsafeSpot::SingleQuotes),
            State::Double => Some(UnsafeSpot::DoubleQuotes),
            State::Backquote => Some(UnsafeSpot::Backquotes),
            State::Comment => Some(UnsafeSpot::Comment),
            State::Plain if self.escaped || self.previous == Some('$') => {
                Some(UnsafeSpot::AfterEscape)
            }
            State::Plain if self.heredoc => Some(UnsafeSpot::HereDocument),
            State::Plain if self.braces > 0 || self.arithmetic > 0 => Some(UnsafeSpot::Expansion),
            State::Plain if self.unfollowed => Some(UnsafeSpot::Unfollowed),
            State::Plain => None,
        };
        if let Some(spot) = spot {
            return Err(spot);
        }
        self.word_start = false;
        // `"$N"` ends in a closing quote: nothing after it can join an escape.
        self.previous = Some('"');
        Ok(())
    }
}

/// The quoted positional parameter `index` (1-based): `"$1"` … `"$9"`, `"${10}"` ….
pub(crate) fn positional_word(index: usize) -> String {
    if index < 10 {
        format!("\"${index}\"")
    } else {
        format!("\"${{{index}}}\"")
    }
}

/// Whether `value` could run as code where bash (or ksh) evaluates it as arithmetic
/// (`[[ $1 -gt 1 ]]`, `$(( $1 ))`, `let`, an indexed array's subscript): that
/// evaluation expands the subscript of an array reference inside the value, so
/// `a[$(cmd)]` or `` a[`cmd`] `` runs `cmd` even when the value was passed as data.
/// Nothing else in an arithmetic expression expands, so a value without a `[`
/// followed by `$` or a backquote is inert there.
pub(crate) fn could_run_in_arithmetic(value: &str) -> bool {
    value
        .find('[')
        .and_then(|open| value.get(open..))
        .is_some_and(|rest| rest.contains(['$', '`']))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks the placeholder positions of `template`, where `@` marks a placeholder.
    fn check(template: &str) -> Result<(), UnsafeSpot> {
        let mut scan = ShellScan::default();
        let mut pieces = template.split('@');
        scan.feed(pieces.next().unwrap_or_default());
        for piece in pieces {
            scan.placeholder()?;
            scan.feed(piece);
        }
        Ok(())
    }

    #[test]
    fn plain_word_positions_are_accepted() {
        for template in [
            "echo @",
            "@",
            "echo a@b",
            "printf '%s\\n' @ @",
            "grep -e @ -- file.txt | wc -l",
            "cd /tmp && ls --color=never @",
            "echo \"done\" @; echo 'x' @",
            "x=@ env",
            "echo $(cat @)",
            "echo @ # a comment after",
            "echo ${HOME} @",
            "echo $((1 + 2)) @",
            "echo @@",
        ] {
            assert_eq!(check(template), Ok(()), "{template}");
        }
    }

    #[test]
    fn quoted_commented_and_expanded_positions_are_refused() {
        for (template, spot) in [
            ("echo '@'", UnsafeSpot::SingleQuotes),
            ("echo \"@\"", UnsafeSpot::DoubleQuotes),
            ("echo \"a $HOME @ b\"", UnsafeSpot::DoubleQuotes),
            ("echo `cat @`", UnsafeSpot::Backquotes),
            ("echo hi # @", UnsafeSpot::Comment),
            ("#@", UnsafeSpot::Comment),
            ("cat <<EOF\n@\nEOF", UnsafeSpot::HereDocument),
            ("cat <<< @", UnsafeSpot::HereDocument),
            ("echo ${X:-@}", UnsafeSpot::Expansion),
            ("echo $((@ + 1))", UnsafeSpot::Expansion),
            ("((n = @))", UnsafeSpot::Expansion),
            ("echo \\@", UnsafeSpot::AfterEscape),
            ("echo $@", UnsafeSpot::AfterEscape),
            ("echo \"$(date)\" @", UnsafeSpot::Unfollowed),
        ] {
            assert_eq!(check(template), Err(spot), "{template}");
        }
    }

    #[test]
    fn a_hash_inside_a_word_is_not_a_comment() {
        assert_eq!(check("echo a#b @"), Ok(()));
        assert_eq!(check("echo @#x @"), Ok(()));
    }

    #[test]
    fn positional_parameters_are_quoted_words() {
        assert_eq!(positional_word(1), "\"$1\"");
        assert_eq!(positional_word(9), "\"$9\"");
        assert_eq!(positional_word(10), "\"${10}\"");
    }

    #[test]
    fn subscripts_with_expansions_are_flagged() {
        for value in ["a[$(id)]", "a[`id`]", "x[1]+a[${y}]", "[$"] {
            assert!(could_run_in_arithmetic(value), "{value}");
        }
        for value in ["$(id)", "`id`", "a[1]", "150", "it's $5", "$x [y]", ""] {
            assert!(!could_run_in_arithmetic(value), "{value}");
        }
    }

    #[test]
    fn positional_values_reach_sh_as_one_literal_word() {
        let values = [
            "hi; id > x",
            "it's",
            "'; touch pwned; '",
            "$(touch pwned)",
            "`touch pwned`",
            "a\nb",
            "\\'",
            "--help",
            "*",
        ];
        for value in values {
            let output = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf '%s' {}", positional_word(1)))
                .arg("sh")
                .arg(value)
                .output()
                .unwrap();
            assert!(output.status.success(), "{value}");
            assert_eq!(String::from_utf8(output.stdout).unwrap(), value);
        }
    }
}
