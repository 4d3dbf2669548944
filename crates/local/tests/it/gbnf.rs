//! A small GBNF recogniser for the tests: parses a grammar as llama.cpp's grammar
//! parser reads it (rules, literals with escapes, character classes, groups,
//! alternatives, `?`, `*`, `+`, `{m}`, `{m,}`, `{m,n}`) and says whether a text is in
//! the language of a rule. It follows every way a text can be read (sets of end
//! positions), so it needs no lookahead; a grammar whose rules call themselves without
//! consuming a character would not end, and the grammars under test have none.

use std::collections::{BTreeSet, HashMap};

#[derive(Debug, Clone)]
enum Expr {
    Alt(Vec<Expr>),
    Seq(Vec<Expr>),
    Lit(Vec<char>),
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    Ref(String),
    Repeat(Box<Expr>, usize, Option<usize>),
}

/// A parsed grammar.
pub struct Grammar {
    rules: HashMap<String, Expr>,
}

impl Grammar {
    /// Parses `text`; panics on anything llama.cpp's parser would refuse that this
    /// reader knows of (an unknown rule, an unclosed group, a bad escape).
    pub fn parse(text: &str) -> Self {
        let mut rules = HashMap::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let (name, body) = line
                .split_once(" ::= ")
                .unwrap_or_else(|| panic!("not a rule: {line}"));
            let chars: Vec<char> = body.chars().collect();
            let mut at = 0;
            let expr = alternatives(&chars, &mut at);
            assert_eq!(at, chars.len(), "trailing text in {line}");
            assert!(
                rules.insert(name.trim().to_owned(), expr).is_none(),
                "rule {name} twice"
            );
        }
        let grammar = Self { rules };
        for expr in grammar.rules.values() {
            grammar.check_refs(expr);
        }
        grammar
    }

    fn check_refs(&self, expr: &Expr) {
        match expr {
            Expr::Alt(items) | Expr::Seq(items) => items.iter().for_each(|e| self.check_refs(e)),
            Expr::Ref(name) => assert!(self.rules.contains_key(name), "undefined rule {name}"),
            Expr::Repeat(inner, _, _) => self.check_refs(inner),
            Expr::Lit(_) | Expr::Class { .. } => {}
        }
    }

    /// Whether the whole of `text` is read by rule `start`.
    pub fn accepts(&self, start: &str, text: &str) -> bool {
        let chars: Vec<char> = text.chars().collect();
        let expr = Expr::Ref(start.to_owned());
        self.ends(&expr, &chars, 0).contains(&chars.len())
    }

    fn ends(&self, expr: &Expr, text: &[char], at: usize) -> BTreeSet<usize> {
        match expr {
            Expr::Alt(items) => items.iter().flat_map(|e| self.ends(e, text, at)).collect(),
            Expr::Seq(items) => {
                let mut positions = BTreeSet::from([at]);
                for item in items {
                    positions = positions
                        .iter()
                        .flat_map(|p| self.ends(item, text, *p))
                        .collect();
                    if positions.is_empty() {
                        break;
                    }
                }
                positions
            }
            Expr::Lit(literal) => {
                let end = at + literal.len();
                if text.get(at..end) == Some(literal.as_slice()) {
                    BTreeSet::from([end])
                } else {
                    BTreeSet::new()
                }
            }
            Expr::Class { negated, ranges } => match text.get(at) {
                Some(c) if ranges.iter().any(|(a, b)| (a..=b).contains(&c)) != *negated => {
                    BTreeSet::from([at + 1])
                }
                _ => BTreeSet::new(),
            },
            Expr::Ref(name) => self.ends(&self.rules[name], text, at),
            Expr::Repeat(inner, min, max) => {
                let mut result = BTreeSet::new();
                let mut frontier = BTreeSet::from([at]);
                let mut count = 0;
                let mut seen = BTreeSet::new();
                loop {
                    if count >= *min {
                        result.extend(frontier.iter().copied());
                    }
                    if max.is_some_and(|max| count >= max) || frontier.is_empty() {
                        break;
                    }
                    let next: BTreeSet<usize> = frontier
                        .iter()
                        .flat_map(|p| self.ends(inner, text, *p))
                        .filter(|p| count < *min || seen.insert(*p))
                        .collect();
                    frontier = next;
                    count += 1;
                    if count > text.len() + min + 1 {
                        break;
                    }
                }
                result
            }
        }
    }
}

fn skip_blanks(chars: &[char], at: &mut usize) {
    while chars.get(*at).is_some_and(|c| *c == ' ') {
        *at += 1;
    }
}

fn alternatives(chars: &[char], at: &mut usize) -> Expr {
    let mut alts = vec![sequence(chars, at)];
    while chars.get(*at) == Some(&'|') {
        *at += 1;
        alts.push(sequence(chars, at));
    }
    Expr::Alt(alts)
}

fn sequence(chars: &[char], at: &mut usize) -> Expr {
    let mut items = Vec::new();
    loop {
        skip_blanks(chars, at);
        match chars.get(*at) {
            None | Some('|' | ')') => break,
            _ => {
                let primary = primary(chars, at);
                items.push(postfix(chars, at, primary));
            }
        }
    }
    Expr::Seq(items)
}

fn postfix(chars: &[char], at: &mut usize, mut expr: Expr) -> Expr {
    loop {
        match chars.get(*at) {
            Some('?') => expr = Expr::Repeat(Box::new(expr), 0, Some(1)),
            Some('*') => expr = Expr::Repeat(Box::new(expr), 0, None),
            Some('+') => expr = Expr::Repeat(Box::new(expr), 1, None),
            Some('{') => {
                let close = chars[*at..].iter().position(|c| *c == '}').unwrap() + *at;
                let inside: String = chars[*at + 1..close].iter().collect();
                let (min, max) = match inside.split_once(',') {
                    Some((a, "")) => (a.trim().parse().unwrap(), None),
                    Some((a, b)) => (a.trim().parse().unwrap(), Some(b.trim().parse().unwrap())),
                    None => (
                        inside.trim().parse().unwrap(),
                        Some(inside.trim().parse().unwrap()),
                    ),
                };
                expr = Expr::Repeat(Box::new(expr), min, max);
                *at = close;
            }
            _ => return expr,
        }
        *at += 1;
    }
}

fn primary(chars: &[char], at: &mut usize) -> Expr {
    match chars[*at] {
        '"' => {
            *at += 1;
            let mut literal = Vec::new();
            while chars[*at] != '"' {
                literal.push(escaped(chars, at));
            }
            *at += 1;
            Expr::Lit(literal)
        }
        '[' => {
            *at += 1;
            let negated = chars[*at] == '^';
            if negated {
                *at += 1;
            }
            let mut ranges = Vec::new();
            while chars[*at] != ']' {
                let from = escaped(chars, at);
                if chars[*at] == '-' && chars[*at + 1] != ']' {
                    *at += 1;
                    let to = escaped(chars, at);
                    ranges.push((from, to));
                } else {
                    ranges.push((from, from));
                }
            }
            *at += 1;
            Expr::Class { negated, ranges }
        }
        '(' => {
            *at += 1;
            let inner = alternatives(chars, at);
            assert_eq!(chars.get(*at), Some(&')'), "unclosed group");
            *at += 1;
            inner
        }
        c if c.is_ascii_alphanumeric() || c == '-' => {
            let start = *at;
            while chars
                .get(*at)
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '-')
            {
                *at += 1;
            }
            Expr::Ref(chars[start..*at].iter().collect())
        }
        c => panic!("unexpected {c:?} at {at}"),
    }
}

/// One character of a literal or class, reading an escape.
fn escaped(chars: &[char], at: &mut usize) -> char {
    let c = chars[*at];
    *at += 1;
    if c != '\\' {
        return c;
    }
    let e = chars[*at];
    *at += 1;
    match e {
        'n' => '\n',
        'r' => '\r',
        't' => '\t',
        'x' => {
            let hex: String = chars[*at..*at + 2].iter().collect();
            *at += 2;
            char::from_u32(u32::from_str_radix(&hex, 16).unwrap()).unwrap()
        }
        '\\' | '"' | '[' | ']' | '-' => e,
        other => panic!("unknown escape \\{other}"),
    }
}
