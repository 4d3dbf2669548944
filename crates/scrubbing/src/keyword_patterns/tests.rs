//! The built-in patterns: every one compiles and finds its sample; a text compiles
//! only the patterns it triggers, and one that does not compile fails it.

use super::*;
use regex::RegexSet;

/// One sample match per pattern, in pattern order.
const SAMPLES: &[&str] = &[
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
    "AKIAIOSFODNN7EXAMPLE",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "xoxb-2233445566-abcdefghijkl",
    "sk-ant-api03-abcdefghij0123456789",
    "sk-proj-abcdefghij0123456789",
    "AIzaSyD-abcdefghijklmnopqrstuvwxyz01234",
    "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc",
    "glpat-abcdefghij0123456789",
    "npm_abcdefghij0123456789abcdefghij012345",
    "hf_abcdefghij0123456789abcdefghij01",
    "SG.abcdefghij012345.abcdefghij012345",
    "postgres://app:hunter22@db",
    "https://0123456789abcdef0123@o1.ingest.sentry.io/1",
    "https://chat.example.com/hooks/xq3z8k1m5n7p9r2t4v6w8y0a1b",
    "mysql -u root -phunter22 db",
    "sshpass -p hunter22 ssh host",
    "redis-cli -h x -a hunter22",
    "docker login -u ada -p hunter22",
    "psexec \\\\h -u ada -p hunter22 cmd",
    "schtasks /create /tn b /ru ada /rp hunter22",
    "CREATE USER 'ada'@'%' IDENTIFIED BY 'hunter22'",
    "auth=('ada', 'hunter22')",
    "mysqli_connect('db', 'ada', 'hunter22')",
    "root:$6$rounds=5000$abcdefgh$0123456789abcdefghijklmn:19000",
    "$krb5tgs$23$*svc$CORP.LOCAL$http/web*$0a1b2c3d4e5f60718293a4b5c6d7e8f9$0123456789abcdef",
    " password 7 0822455D0A16",
    "snmp-server community n3tw0rkRO RO",
    "mnemonic: legal winner thank year wave sausage worth useful legal winner thank yellow",
    "Authorization: Bearer abcdef",
    "bearer abcdefghijklmnop1",
    "curl -u ada:lovelace https://x",
    "api_key=abc123",
    "--password hunter22",
];

#[test]
fn builtins_compile() {
    let builtins = builtins().unwrap();
    assert!(builtins.patterns.len() <= crate::keyword_scan::MAX_PATTERNS);
    // Compiled on first use at run time: every one must compile.
    for pattern in &builtins.patterns {
        pattern.regex.get().unwrap();
        for lazy in [&pattern.line_trigger, &pattern.anchored]
            .into_iter()
            .flatten()
        {
            lazy.get().unwrap();
        }
    }
    crate::markup::compile().unwrap();
    crate::prose::compile().unwrap();
    // One of a pattern's trigger literals must occur in every match of the pattern
    // (the keyword pass searches for them as literals).
    let defs = pattern_defs();
    for (def, sample) in defs.iter().zip(SAMPLES) {
        let re = Regex::new(&def.regex).unwrap();
        let m = re
            .find(sample)
            .unwrap_or_else(|| panic!("{} misses {sample}", def.regex));
        assert!(
            trigger_literals(def.trigger).any(|t| m.as_str().contains(t)),
            "trigger {} not in {}",
            def.trigger,
            m.as_str()
        );
    }
    assert_eq!(defs.len(), SAMPLES.len());
}

#[test]
fn only_the_patterns_a_text_triggers_are_compiled() {
    let builtins = build().unwrap();
    let compiled = |builtins: &Builtins| {
        builtins
            .patterns
            .iter()
            .filter(|p| p.regex.is_compiled())
            .count()
    };
    assert_eq!(compiled(&builtins), 0);
    let mut out = Vec::new();
    builtins
        .collect("plain notes about the weather, nothing else", &mut out)
        .unwrap();
    assert!(out.is_empty());
    // The labelled pattern runs on every text; its value pattern waits for a key.
    let labelled = builtins.patterns.iter().find(|p| p.always).unwrap();
    assert!(labelled.line_trigger.is_none());
    assert!(!labelled.anchored.as_ref().unwrap().is_compiled());
    assert_eq!(compiled(&builtins), 0);

    builtins
        .collect(
            "export GITHUB=ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            &mut out,
        )
        .unwrap();
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(compiled(&builtins), 1);
}

#[test]
fn a_pattern_that_does_not_compile_fails_the_text_that_needs_it() {
    let broken = Builtins {
        scanner: KeywordScanner::build(std::iter::empty(), [(0, "xoxb-")].into_iter()).unwrap(),
        patterns: vec![Compiled {
            regex: LazyRegex::new("(unclosed"),
            rule: Rule::Whole(FixedKind::Jwt),
            line_trigger: None,
            anchored: None,
            always: false,
        }],
    };
    let mut out = Vec::new();
    // A text without the trigger never needs it.
    assert_eq!(broken.collect("nothing here", &mut out), Ok(()));
    assert_eq!(broken.collect("a xoxb- token", &mut out), Err(Unavailable));
}

#[test]
fn triggers_are_plain_literals_and_the_labelled_trigger_is_the_label_words() {
    for def in pattern_defs() {
        for literal in trigger_literals(def.trigger) {
            assert!(!literal.is_empty(), "{}", def.trigger);
            // A line trigger is the literals escaped: it finds each one as it is.
            let line = Regex::new(&regex::escape(literal)).unwrap();
            assert!(line.is_match(&format!("x {literal} y")), "{literal}");
        }
    }
    // The labelled pattern's documented trigger: each label word in three spellings.
    let spelled: Vec<String> = crate::keyword_scan::LABEL_WORDS
        .iter()
        .flat_map(|w| {
            let mut cap = w.to_string();
            cap[..1].make_ascii_uppercase();
            [w.to_string(), cap, w.to_ascii_uppercase()]
        })
        .collect();
    assert_eq!(KEYWORD_TRIGGER, spelled.join("|"));
}

#[test]
fn a_trigger_counts_only_in_its_own_case() {
    let builtins = builtins().unwrap();
    let mut out = Vec::new();
    // `AKIA` is case-sensitive: lowercase is not an AWS key id.
    builtins
        .collect("akiaiosfodnn7examplx and more", &mut out)
        .unwrap();
    assert!(out.is_empty(), "{out:?}");
    builtins.collect("AKIAIOSFODNN7EXAMPLX", &mut out).unwrap();
    assert_eq!(out.len(), 1);
}

/// Texts to compare the keyword pass with the searches it replaced: other projects'
/// rule tests (the outside corpus, fit and held-back alike: only equality is
/// asserted), this crate's sources and edge cases.
fn equivalence_texts() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let cases = std::fs::read_to_string(dir.join("tests/fixtures/outside/cases.jsonl")).unwrap();
    let mut texts: Vec<String> = cases
        .lines()
        .map(|line| {
            let case: serde_json::Value = serde_json::from_str(line).unwrap();
            case["text"].as_str().unwrap().to_owned()
        })
        .collect();
    for entry in std::fs::read_dir(dir.join("src")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            texts.push(std::fs::read_to_string(path).unwrap());
        }
    }
    texts.extend(
        [
            "passalt=s3cr3tPa55 sessig=abc123def",
            "PaSS=hunter22 pAss: x TOKEN=ab12cd34ef Token: 'zz9'",
            "api-KEY: 9b1d3c5e7f2a4b6c8d0e1f2a3b4c5d6e",
            "--password hunter22 -u ada:lovelace1 mysql -phunter22",
            "SG.abcdefghij012345.abcdefghij012345 sg.abcdefghij012345.abcdefghij012345",
            "akiaiosfodnn7example AKIAIOSFODNN7EXAMPLE Authorization: Bearer abc123def456",
            "ключ=значение token=тоkеn123 pass\u{200B}word=x",
        ]
        .map(str::to_owned),
    );
    texts
}

#[test]
fn the_keyword_pass_finds_what_the_three_searches_found() {
    let builtins = builtins().unwrap();
    let defs = pattern_defs();
    // The pre-filter as it was: a set of the triggers, the labelled one never.
    let set = RegexSet::new(defs.iter().map(|d| {
        if matches!(d.rule, Rule::Labelled) {
            r"[^\s\S]".to_owned()
        } else {
            trigger_literals(d.trigger)
                .map(regex::escape)
                .collect::<Vec<_>>()
                .join("|")
        }
    }))
    .unwrap();
    let trigger = Regex::new(KEYWORD_TRIGGER).unwrap();
    let anchored = LazyRegex::new(format!(r"\A{VALUE}"));
    // The rules' keywords as they were: their own automaton.
    let rules = crate::rule_data::rules().unwrap();
    let mut words: Vec<&str> = Vec::new();
    let mut rules_of: Vec<Vec<usize>> = Vec::new();
    for (index, rule) in rules.rules.iter().enumerate() {
        for word in &rule.keywords {
            match words.iter().position(|w| w == word) {
                Some(at) => rules_of[at].push(index),
                None => {
                    words.push(word);
                    rules_of.push(vec![index]);
                }
            }
        }
    }
    let automaton = aho_corasick::AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(&words)
        .unwrap();
    let key = |c: &Candidate| (c.range.clone(), c.kind.as_str().to_owned(), c.priority);
    for text in equivalence_texts() {
        let hits = builtins.scanner.scan(&text);
        // The built-in patterns' triggers.
        let was: Vec<usize> = set.matches(&text).iter().collect();
        let now: Vec<usize> = (0..defs.len()).filter(|&i| hits.triggers(i)).collect();
        assert_eq!(was, now, "{text:?}");
        // The labelled values, from the regex trigger and from the pass.
        let (mut before, mut after) = (Vec::new(), Vec::new());
        crate::labelled::collect_labelled(
            &text,
            trigger.find_iter(&text).map(|m| m.range()),
            &anchored,
            true,
            &mut before,
        )
        .unwrap();
        crate::labelled::collect_labelled(
            &text,
            hits.labels.iter().cloned(),
            &anchored,
            true,
            &mut after,
        )
        .unwrap();
        assert_eq!(
            before.iter().map(key).collect::<Vec<_>>(),
            after.iter().map(key).collect::<Vec<_>>(),
            "{text:?}"
        );
        // The rules' keywords.
        let mut was: Vec<(usize, usize)> = automaton
            .find_overlapping_iter(&text)
            .flat_map(|m| {
                rules_of[m.pattern().as_usize()]
                    .iter()
                    .map(move |&r| (r, m.start()))
            })
            .collect();
        let mut now = hits.rules.clone();
        for v in [&mut was, &mut now] {
            v.sort_unstable();
            v.dedup();
        }
        assert_eq!(was, now, "{text:?}");
    }
}

/// `hash`, inside `text`, was redacted whole as a password hash.
fn assert_hash_redacted_whole(text: &str, out: &crate::Scrubbed<'_>, hash: &str) {
    assert!(
        out.redactions
            .iter()
            .any(|r| r.kind == RedactionKind::PasswordHash
                && text.get(r.range.clone()) == Some(hash)),
        "{text}: {:?}",
        out.redactions
    );
}

#[test]
fn password_hashes_in_the_modular_crypt_format_are_redacted_whole() {
    for hash in [
        "$1$OKgLCmVl$d02jECa4DXn/oXX0R.MoQ/",
        "$apr1$8bk0b3rx$yGsSGgAG3dR0Yx4cCtJbL/",
        "$2b$12$R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW",
        "$5$rounds=80000$wnsT7Yr92oJoP28r$cKhJImk5mfuSKV9b3mumNzlbstFUplKtQXXMo4G6Ep5",
        "$6$qoE2letU$wWPRl.PVczjzeMVgjiA8LLy2nOyZbf7Amj3qLIL978o18gbMySdKZ7uepq9tmMQXxyTIrS12Pln.2Q/6Xscao0",
        "$y$j9T$F5Jx5fExrKuPp53xLKQ..1$X3DX6M94c7o.9agCG9G317fhZg9SqC.5i5rd.RhAtQ7",
        "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHRzYWx0$Ww4fXh2a1ZdqzqBqTq1eR3kQ0VJ7uX2p5hbE1w3S3oU",
        "$pbkdf2-sha256$29000$N2bMeW9tzXmP0dp7r7WWMg$Q9cw5Jw6x8tBWqO0bwG3X2JqZ0oK2mBb4fC7mT1T2aE",
    ] {
        for text in [
            hash.to_owned(),
            format!("root:{hash}:19000:0:99999:7:::"),
            format!("admin:{hash}"),
            format!("password_hash = \"{hash}\""),
        ] {
            let out = crate::scrub(&text);
            assert!(
                !out.text.contains(&hash[hash.len() - 8..]),
                "{text} -> {}",
                out.text
            );
            assert_hash_redacted_whole(&text, &out, hash);
        }
    }
}

#[test]
fn kerberos_hashes_as_roasting_tools_print_them_are_redacted_whole() {
    for hash in [
        "$krb5asrep$23$user@corp.example:3e156ada591263b8aab0965f5aebd837$007497cb51b6c8116d6407a782ea0e1c5402b17db7afa6b0",
        "$krb5tgs$23$*svc_sql$CORP.EXAMPLE$MSSQLSvc/db01:1433*$b2c8a4e0f1d39e7c6a5b4d3c2e1f0a9b$9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        "$krb5pa$18$ada$CORP.EXAMPLE$0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a6978",
    ] {
        for text in [
            hash.to_owned(),
            format!("[+] {hash}"),
            format!("hash = \"{hash}\""),
        ] {
            let out = crate::scrub(&text);
            assert_hash_redacted_whole(&text, &out, hash);
        }
    }
    // The scheme's name in prose or a format string, without a hash after it.
    for text in [
        "hashcat -m 18200 for $krb5asrep$23$ hashes",
        "fmt = '$krb5tgs$%d$*%s*$'",
    ] {
        assert!(crate::scrub(text).is_clean(), "{text}");
    }
}

#[test]
fn a_device_configs_typed_secrets_and_communities_are_redacted() {
    for (text, secret) in [
        (
            "line vty 0 4\n password 7 0822455D0A16\n login",
            "0822455D0A16",
        ),
        (
            "enable secret 5 $1$mERr$hx5rVt7rPNoS4wqbXKX7m0",
            "$1$mERr$hx5rVt7rPNoS4wqbXKX7m0",
        ),
        (
            "username ada privilege 15 secret 9 $9$nhEmQVczB7dqsO$X.HsgL6x1il0RxkOSSvyQYwucySCt7qFm4v7pqCxkKM",
            "$9$nhEmQVczB7dqsO$X.HsgL6x1il0RxkOSSvyQYwucySCt7qFm4v7pqCxkKM",
        ),
        ("tacacs-server key 7 104D000A0618", "104D000A0618"),
        ("radius-server host 10.0.0.5 key 0 Rad1usK3y!", "Rad1usK3y!"),
        ("pac key 0 MyPacKeyS3cret", "MyPacKeyS3cret"),
        (
            "snmp-server community S3cretCommunity RW 99",
            "S3cretCommunity",
        ),
    ] {
        let out = crate::scrub(text);
        assert!(
            out.redactions
                .iter()
                .any(|r| text.get(r.range.clone()) == Some(secret)),
            "{text}: {:?}",
            out.redactions
        );
    }
    // Prose, a type that is no encoding, a value that does not fit its type, a
    // placeholder.
    for text in [
        "I kept the secret 5 years",
        "the password 7 characters long",
        "secret 0 apples",
        "key 7 is the seventh key",
        "ip ospf authentication-key 3 0822455D0A16",
        " password 7 <encoded>",
        "snmp-server community <string> RO",
    ] {
        assert!(
            crate::scrub(text).is_clean(),
            "{text}: {:?}",
            crate::scrub(text).redactions
        );
    }
}

#[test]
fn a_seed_phrase_under_its_label_is_redacted_whole() {
    let twelve = "legal winner thank year wave sausage worth useful legal winner thank yellow";
    let twenty_four = "letter advice cage absurd amount doctor acoustic avoid letter advice cage absurd \
                       amount doctor acoustic avoid letter advice cage absurd amount doctor acoustic bless";
    for (text, phrase) in [
        (format!("\"mnemonic\": \"{twelve}\""), twelve),
        (format!("SEED_PHRASE={twelve}"), twelve),
        (
            format!("wallet.recoveryPhrase = '{twenty_four}';"),
            twenty_four,
        ),
        (
            format!("Secret Recovery Phrase: {twenty_four}"),
            twenty_four,
        ),
        (format!("backup_words:\n  {twelve}"), twelve),
    ] {
        let out = crate::scrub(&text);
        assert!(
            out.redactions
                .iter()
                .any(|r| text.get(r.range.clone()) == Some(phrase)),
            "{text}: {:?}",
            out.redactions
        );
        assert!(
            !out.text.contains("winner") && !out.text.contains("advice"),
            "{}",
            out.text
        );
    }
}

#[test]
fn words_after_a_seed_label_that_are_no_phrase_stay() {
    for text in [
        // Prose: a short word or a count that is not BIP-39's.
        "mnemonic: write the twelve words on paper and keep them in a safe place",
        "seed phrase: never share these words with anyone who asks for them online today",
        "mnemonic = legal winner thank year wave sausage worth useful legal winner thank yellow wave",
        "recovery_phrase: Legal Winner Thank Year Wave Sausage Worth Useful Legal Winner Thank Yellow",
        "seed = 42",
        "let words = text.split_whitespace().collect::<Vec<_>>();",
    ] {
        assert!(
            crate::scrub(text).is_clean(),
            "{text}: {:?}",
            crate::scrub(text).redactions
        );
    }
}

#[test]
fn dollar_sequences_that_are_not_hashes_stay() {
    for text in [
        "s/(a)(b)/$1$2/g",
        "echo \"$1$2$3\"",
        "let price = \"$5$\";",
        "cost: $6$ per seat",
        "re.sub(r'(x)(y)', r'$1$2', line)",
        "PS1='$y$ '",
    ] {
        assert!(crate::scrub(text).is_clean(), "{text}");
    }
}

#[test]
fn a_password_after_a_user_flag_is_redacted_on_any_command_line() {
    for (text, secret) in [
        (
            "psexec \\\\10.0.0.5 -u Administrator -p dev_admin cmd",
            "dev_admin",
        ),
        (
            "PsExec.exe \\\\host -u DOMAIN\\ops -p 'Tr0ub4dor&3' -i calc",
            "Tr0ub4dor&3",
        ),
        (
            "oc login -u developer -p Dev3lop3r! https://api.example.com:6443",
            "Dev3lop3r!",
        ),
        (
            "mongosh -u admin -p \"S3cr3t!x\" --authenticationDatabase admin",
            "S3cr3t!x",
        ),
        (
            "rabbitmqadmin -H mq -u ops@example.com -p q8Vz2Lkm list queues",
            "q8Vz2Lkm",
        ),
    ] {
        let out = crate::scrub(text);
        assert!(!out.text.contains(secret), "{text} -> {}", out.text);
    }
}

#[test]
fn a_p_flag_that_is_no_password_stays() {
    for text in [
        // `-p` as a port or a published port.
        "docker run -u 1000 -p 8080:80 nginx",
        "docker run -u root -p 127.0.0.1:5432:5432 postgres",
        "server -u app -p 8443",
        // `-u` that takes no value, and `-p` as a flag or a file.
        "cp -u -p src dst",
        "git diff -u -p HEAD",
        "mongo -u admin -p --authenticationDatabase admin",
        "python -u train.py -p config.yaml",
        "tool -u alice -p ./profiles/dev",
        // Placeholders.
        "psexec \\\\h -u admin -p <password> cmd",
        "psexec \\\\h -u admin -p $PASSWORD cmd",
    ] {
        let out = crate::scrub(text);
        assert!(out.is_clean(), "{text} -> {}", out.text);
    }
}

#[test]
fn a_password_given_positionally_to_a_credential_is_redacted() {
    for (text, secret) in [
        (
            "r = requests.get(url, auth=('admin', 'S3cr3t!x'))",
            "S3cr3t!x",
        ),
        ("session.auth = (\"admin\", \"Tr0ub4dor&3\")", "Tr0ub4dor&3"),
        ("auth = HTTPBasicAuth('admin', 'S3cr3t!x')", "S3cr3t!x"),
        (
            "new NetworkCredential(\"ops@example.com\", \"Pa55w0rd!x\");",
            "Pa55w0rd!x",
        ),
        ("server.login(\"me@example.com\", \"q8Vz2Lkm\")", "q8Vz2Lkm"),
        ("client.LogIn(\"svc\", 'hunter2x');", "hunter2x"),
    ] {
        let out = crate::scrub(text);
        assert!(!out.text.contains(secret), "{text} -> {}", out.text);
        assert!(
            out.text.contains("admin") || !text.contains("admin"),
            "{text}"
        );
    }
}

#[test]
fn two_strings_that_are_no_credentials_stay() {
    for text in [
        // Not named by a credential word.
        "author(\"Jane\", \"D0e-Smith\")",
        "login_url(\"https://a\", \"b2c3d4e5\")",
        // Variables, placeholder words, prose, a scheme.
        "auth=(user, password)",
        "HTTPBasicAuth('user', 'password')",
        "auth=('username', 'your-password-here')",
        "login(\"Welcome back\", \"Please sign in to continue\")",
        "set_auth(\"mode\", \"basic\")",
        "creds = (\"\", \"\")",
        // Three literals: which one is the password is not known.
        "DirectoryEntry(\"LDAP://x\", \"user\", \"Rrhh1234\")",
    ] {
        let out = crate::scrub(text);
        assert!(out.is_clean(), "{text} -> {}", out.text);
    }
}
