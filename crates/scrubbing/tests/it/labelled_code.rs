//! Labelled code that holds no secret, written for issue 46.4 from the shapes code
//! takes (not from any corpus's failures): a value that is a variable, a constant, a
//! field path, a call, a type, a template, a resource's name, a rule list, a short
//! number, a path, a reference into a secret store (`vault:…`, `op://…`,
//! `@Microsoft.KeyVault(…)`), an interpolation (`$__env{…}`, `%{hiera(…)}`) or a
//! masked documentation example where a secret's label is. Each line comes back unchanged; the
//! same labels with a secret's value are still redacted.

use oxydra_scrubbing::scrub;

const CODE: &[&str] = &[
    r#"password = user_password"#,
    r#"secret = secretValue"#,
    r#"api_key = apiKey"#,
    r#"token := tokenFromEnv"#,
    r#"$password = $_POST['password'];"#,
    r#"password: str = None"#,
    r#"private_key = hello()"#,
    r#"password = {}"#,
    r#"API_KEY = config['api_key']"#,
    r#"token = data["token"]"#,
    r#"password = getpass.getpass()"#,
    r#"secret: !vault |"#,
    r#"password = some.module.CONSTANT"#,
    r#"if password != confirm_password:"#,
    r#"password = input("Password: ")"#,
    r#"self.password = password"#,
    r#"password = kwargs.pop("password")"#,
    r#"password = ENV.fetch("PASSWORD")"#,
    r#"password = @password"#,
    r#"password = *password"#,
    r#"password = &cfg.password"#,
    r#"let token = &args[1];"#,
    r#"const apiKey = process.env.API_KEY;"#,
    r#"apiKey: this.apiKey,"#,
    r#"token: ${{ secrets.GITHUB_TOKEN }}"#,
    r#"password: !Ref DbPassword"#,
    r#"client_secret = settings.GOOGLE_CLIENT_SECRET"#,
    r#"var token = await GetTokenAsync();"#,
    r#"password VARCHAR(255) NOT NULL,"#,
    r#"password := os.Getenv("PASSWORD")"#,
    r#"token, err := auth.GetToken(ctx)"#,
    r#"token: "<%= ENV['TOKEN'] %>""#,
    r#"password: '#{password}'"#,
    r#""password": "{password}""#,
    r#"password = "true""#,
    r#"password: "null""#,
    r#"token = "Bearer " + token"#,
    r#"token = "Basic " + encoded"#,
    r#"api_key = "Token " + key"#,
    r#"password: Joi.string().required()"#,
    r#"password: String::new(),"#,
    r#""secret_key_base": "<%= ENV[\"SECRET_KEY_BASE\"] %>""#,
    r#"client_secret: process.env.CLIENT_SECRET!"#,
    r#"password = ADMIN_PASSWORD_FROM_VAULT"#,
    r#"token = GITHUB_TOKEN_READONLY"#,
    r#"api-key: 12345"#,
    r#"secret_version = "latest""#,
    r#"token_type: Bearer"#,
    r#"key_id = "alias/my-key""#,
    r#"api_key_name = "prod-backend""#,
    r#"secretRef: db-credentials"#,
    r#"passwordPolicy: strict"#,
    r#"tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")"#,
    r#"keyboard = "us""#,
    r#"secret_store = "vault""#,
    r#"password_file = "/etc/app/password.txt""#,
    r#"token_path: /var/run/secrets/kubernetes.io/serviceaccount/token"#,
    r#"auth_method = "oauth2""#,
    r#"auth: true"#,
    r#"credentials: include"#,
    r#"credentials = "same-origin""#,
    r#"cookie: session_id"#,
    r#"SESSION_COOKIE_NAME = "sessionid""#,
    r#"password-min-length=8"#,
    r#"secret: secret-volume"#,
    r#"apiKeySecretRef: { name: api-key, key: value }"#,
    r#"tokens_per_minute: 90000"#,
    r#"max_tokens: 4096"#,
    r#"token_budget = 2_000_000"#,
    r#"access_key_id: ${{ vars.ACCESS_KEY_ID }}"#,
    r#"secret_access_key = var.secret_access_key"#,
    r#"password = data.aws_ssm_parameter.db_password.value"#,
    r#"token = local.github_token"#,
    r#"api_key = module.secrets.api_key"#,
    r#"password = random_password.db.result"#,
    r#"secret = aws_secretsmanager_secret_version.db.secret_string"#,
    r#"password := flag.String("password", "", "the password")"#,
    r#"token, _ := cmd.Flags().GetString("token")"#,
    r#"private_key_path = "~/.ssh/id_rsa""#,
    r#"ssh_key: ~/.ssh/id_ed25519.pub"#,
    r#"key_file = "server.key""#,
    r#"PASSWORD_HASHERS = ["#,
    r#"secret = Secret(name="db", value=value)"#,
    r#"password = Password(min_length=12)"#,
    r#"token = Token.objects.get(user=user)"#,
    r#"api_key = ApiKey.generate()"#,
    r#"password = models.CharField(max_length=128)"#,
    r#"token = serializers.CharField(read_only=True)"#,
    r#"password => 'required|min:8',"#,
    r#"'password' => 'required|string|confirmed',"#,
    r#"password: { type: String, required: true },"#,
    r#"password: yup.string().required('Password is required'),"#,
    r#"OP_TOKEN=op://Engineering/GitHub/credential"#,
    r#"password: op://vault/db/password"#,
    r#"token = "vault:secret/data/ci#token""#,
    r#"api_key = "projects/my-proj/secrets/api-key/versions/latest""#,
    r#"password: "{{ lookup('env', 'DB_PASSWORD') }}""#,
    r#"api_key: "@Microsoft.KeyVault(SecretUri=https://myvault.vault.azure.net/secrets/mysecret/)""#,
    r#"token: !secret github_token"#,
    r#"password: !env_var DB_PASSWORD"#,
    r#"DISCORD_WEBHOOK: https://discord.com/api/webhooks/<id>/<token>"#,
    r#"HUGGING_FACE_HUB_TOKEN: ${{ secrets.HF_TOKEN }}"#,
    r#"tailscale up --authkey=${TS_AUTHKEY}"#,
    r#"TS_AUTHKEY=file:/run/secrets/ts_authkey"#,
    r#"api_key: "%{hiera('datadog_api_key')}""#,
    r#"password: "$__env{GF_PASSWORD}""#,
    r#"secureJsonData.password: $__file{/etc/secrets/gf_password}"#,
    r#"token: ${file:/run/secrets/token}"#,
    r#"license_key: '<%= license_key %>'"#,
    r#"api_key: "{{ .Values.datadog.apiKey }}""#,
    r#"token: "{{ env "GITHUB_TOKEN" }}""#,
    r#"password: '{{ vault "secret/db" "password" }}'"#,
    r#"api_key = ENV["OPENAI_API_KEY"]"#,
    r#"api_key: $OPENAI_API_KEY"#,
    r#"token: "$(GITHUB_TOKEN)""#,
    r#"password: "%(db_password)s""#,
    r##"secret: "#{ENV['SECRET']}""##,
    r#"token: ((github-token))"#,
    r#"password: ((db.password))"#,
    r#"api_key = "<insert your key>""#,
    r#"token: your-token-goes-here"#,
    r#"API_KEY=your_api_key"#,
    r#"api_key: "sk-...""#,
    r#"api_key="sk-proj-XXXX""#,
    r#"webhook: "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX""#,
    r#"SENTRY_AUTH_TOKEN=sntrys_YOUR_TOKEN_HERE"#,
    r#"access_token: "<ACCESS_TOKEN>""#,
    r#"password = """#,
    r#"token = ''"#,
    r#"secret = None"#,
    r#"api_key: null"#,
    r#"password: ~"#,
    r#"client_secret: !!str"#,
    r#"token = Secret.from_env_var("HF_TOKEN")"#,
    r#"api_key = Secret(os.environ["API_KEY"])"#,
    r#"password = SecretStr("")"#,
    r#"password: SecretStr = Field(..., env="DB_PASSWORD")"#,
    r#"token: Optional[SecretStr] = None"#,
    r#"api_key: str | None = None"#,
    r#"secret_key: bytes = b"""#,
    r#"password = "" if debug else os.environ["PASSWORD"]"#,
    r#"token = args.token or os.environ.get("TOKEN")"#,
    r#"api_key ||= ENV.fetch("API_KEY")"#,
    r#"password ?= $(shell cat .password)"#,
    r#"export TOKEN="$(gh auth token)""#,
    r#"GITHUB_TOKEN=$(gh auth token) make release"#,
    r#"token=`cat ~/.token`"#,
    r#"password < /run/secrets/db"#,
    // Issue 46.4, other languages and config: a name made of words under a token,
    // key or secret label names a field or a parameter (a pagination spec, an enum).
    r#""result_token": "ResumeCursor","#,
    r#"    "page_token": "continuationMarker","#,
    r#"cursor_token: after_cursor_id"#,
    r#"  secretField: Listing.NextCursor"#,
    r#"ACCESS_KEY = 'Rotation'"#,
    // A docstring's description under the field's name, and a sentence in markup.
    r#"    session_token: Optional. Returned by the last call, if any."#,
    r#"  admin_password: The password set when the server is made."#,
    r#"  "help": "<p>Rotate the signing key before it expires.</p>","#,
    r#"  "doc": "<p>The default sort key is CreatedAt.</p>","#,
    r#"refresh_token:"#,
    r#"    Returned once, when the grant is made."#,
    // A format string's template: `str.format`'s name, a printf directive.
    r#"  webhook_secret: '{secret_resource_name}'"#,
    r#"    self.auth_token = 'Token %s' % raw"#,
    // Items of a list of strings, not a name and its value.
    r#"    fields=['owner', 'session_token', 'expiry', 'scope'],"#,
    r#"const SORTED = ["created", "api_key", "label"];"#,
    // A variable handed on under its label's own name.
    r#"    self._authtoken = authtoken"#,
    r#"    creds.apikey = apikey"#,
    // A short lowercase word under a generated value's label: a setting or a name.
    "permissions:\n  contents: read\n  id-token: write",
    r#"  "resume_token": "cursor","#,
    r#"    self.token = peeked"#,
    // PHP's and Perl's `->`, a static call by a `::` path, YAML's `!!` tags, a printf
    // template of several directives.
    r#"my $token = $conn->{token};"#,
    r#"$secret = $vault->secret;"#,
    r#"    $account->password = Hash::make($form->password);"#,
    r#"  'password' => Crypt::hash($input->get('password')),"#,
    r#"private_key: !!binary |"#,
    r#"    auth_token = "%s/%s" % (org, name)"#,
    // `pass` as a verb in a docstring; a package's version range.
    r#"    **options: Settings to pass to transport.Open."#,
    r#"    "passport": "^0.7.0","#,
    // A dotted path's last field, named by two words, is named on its own.
    r#"RotateSigningKey.retry_policy = lambda: Retry(deadline=30)"#,
    r#"if token.token_kind == 'ident':"#,
    // A key after words opens a block of code (`if pwd:`), not a YAML value below it;
    // a line ending in a field path or a next line of one word is no wrapped token.
    "if pwd:\n    path = os.path.join(pwd, name)\n    path = os.path.normpath(path)",
    "    elif auth_token:\n        auth_token = refresh(auth_token)",
    "    >>> tf1.is_strictly_proper\n    False",
    // An enum's member under a comparison or an assignment, a colour in a style
    // sheet, a name or word in one case, a prefix, a run along an alphabet.
    r#"        if token is Name.Builtin:"#,
    r#"ERRORTOKEN = TokenTypes.ERRORTOKEN"#,
    r##"    Token.Keyword: "#c678dd","##,
    r#"next_token = lookahead"#,
    r#"TOKEN_ENDS = TSPECIALS | WSP"#,
    r#"TOKEN_PREFIX = "v2.""#,
    r#"API_KEY = "abcdefghijklmnop""#,
    // A word that ends a sentence or labels one, under the field's name.
    r#"    subjectToken: Required."#,
    r#"    pageToken: DEPRECATED: Unused since v2."#,
    // A map keyed by types' names: data about the types.
    r#"    "Vault::Transit::SigningKey": "9c41e2a7b3d5f801","#,
    r#"  'Crypto::SecretBox' => 'c0d3b4s3_v2x9k',"#,
    // A shell expansion that fails with a message when the variable is unset.
    r#"token: ${TOKEN:?TOKEN must be set}"#,
    r#"      - API_KEY=${API_KEY:?set API_KEY in .env}"#,
    r#"password="${DB_PASSWORD?}""#,
    // A constant's name after a scheme; Swift's `try?` before a call.
    r#"password = env:DB_PASSWORD"#,
    r#"guard let token = try? keychain.get("token") else { return }"#,
    // An aside in a command's help names where a default comes from.
    r#"  --token TOKEN   The token to authenticate with (default: $GITHUB_TOKEN)"#,
    r#"  -p, --password <PASSWORD>  Password for the registry [env: REGISTRY_PASSWORD=]"#,
    // Where a build step puts the value, a mark of a removed one, a documented header.
    r#"password: "@@DB_PASSWORD@@""#,
    r##"api_key: "#{ApiKey}#""##,
    r#"spring.datasource.password=@db.password@"#,
    r#"password=***REMOVED***"#,
    r#"Authorization: Bearer YOUR_TOKEN"#,
    r#"curl -H "Authorization: Token API_KEY" https://api.example.com"#,
    // Documentation's made-up values.
    r#"  "NextToken": "RW5DdDJkMWYwZjM2MzM2VHVpOHJIUXlDUXlhc2QzRGViYnc9SEXAMPLE=","#,
    r#"api_key: "1234567891011EXAMPLE""#,
    // A sentence describing the field.
    r#"  "nextToken": "A dynamically generated value, used for paginating results.""#,
    // An Amazon Resource Name names where a secret is kept.
    r#"secret_arn = "arn:aws:secretsmanager:eu-west-1:111122223333:secret:MySecret-a1b2c3""#,
    r#""token": "arn:aws:secretsmanager:us-east-1:123456789012:secret:tok-AbCdEf""#,
    r#""Resource": "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-password-*""#,
    // A key whose last word describes its secret; a property's name as the value.
    r#"token_signing_alg = "RS256""#,
    r#"password_encryption = scram-sha-256"#,
    r#"password_hash_algorithm = "pbkdf2_sha256""#,
    r#"  "PasswordLastUsed": "2016-09-08T21:47:36Z","#,
    r#"private static final String PASSWORD_KEY = "javax.net.ssl.trustStorePassword";"#,
    r#"TOKEN_PROPERTY = "app.auth.accessToken""#,
    // The word is a flag's or an attribute's argument.
    r#"vault kv get -field=password secret/data/db"#,
    r#"<input type=password name="pw" value="">"#,
    // A type's member, a state, a path with subscripts, a documentation role.
    r#"    Token.Comment: "italic #A3AAB2","#,
    r#"    Token.Menu.Completions.Meta: 'bg:#999999 #000000',"#,
    r#"    "ChangeTokenStatus": "PENDING""#,
    r#"    "output_token": "StreamDescription.Shards[-1].ShardId","#,
    r#"    :param attrs_for_token: :class:`._TokenToAttrsCache` instance."#,
    // A value restating its kind; digits typed in a keyboard's order, then letters.
    r#"api_key="test_api_key_123""#,
    r#"credentials = StaticCredentials(token="token123")"#,
    r#"access_token = "1234567890abcdef""#,
    // Data with a shape of its own under a generated value's label; a symbol.
    r#"token = "2024-01-01T00:00:00Z""#,
    r#"token_regex = "^[A-Za-z0-9_-]{32,}$""#,
    r#"$token-spacing-md: 16px;"#,
    r#"token = "admin@example.com""#,
    r#"token = "localhost:8080""#,
    r#"token = "*/5 * * * *""#,
    r#"token = "v1.0.0-beta.1""#,
    r#"token = "C:\Users\me\token.txt""#,
    r#"token = "30 days""#,
    r#"WHERE token = :token"#,
    // A stand-in inside a value, a format's prefix before a typed run, a digest.
    r#"TOKEN = "ghp_<your token>""#,
    r#"headers = {"Authorization": "Bearer <ACCESS_TOKEN>"}"#,
    r#"token: "ghp_1234567890""#,
    r#"SLACK_TOKEN = "xoxp-1234567890""#,
    r#"image_token = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855""#,
];

#[test]
fn labelled_code_that_holds_no_secret_is_kept() {
    let changed: Vec<String> = CODE
        .iter()
        .filter(|line| !scrub(line).is_clean())
        .map(|line| format!("{line} -> {}", scrub(line).text))
        .collect();
    assert!(changed.is_empty(), "changed:\n{}", changed.join("\n"));
}

#[test]
fn the_same_labels_with_a_secret_are_redacted() {
    for (line, secret) in [
        ("token := \"Zx9qL2mN8vB4kP7wR3tY\"", "Zx9qL2mN8vB4kP7wR3tY"),
        ("password = Sup3r$ecretPw", "Sup3r$ecretPw"),
        ("password = hunterTwo", "hunterTwo"),
        ("password: 4821", "4821"),
        ("api_key: 73019284756102938", "73019284756102938"),
        ("secret: s3cr3t-v4lue-x9q2", "s3cr3t-v4lue-x9q2"),
        (
            "client_secret = 'GOCSPX-Zx9qL2mN8vB4kP7wR3tYq1w'",
            "GOCSPX-Zx9qL2mN8vB4kP7wR3tYq1w",
        ),
        ("password = '@dm1n!2024'", "@dm1n!2024"),
        ("password = \"hunter \"", "hunter"),
        ("token = Bearer_Zx9qL2mN8vB4kP7w", "Bearer_Zx9qL2mN8vB4kP7w"),
        // A name made of words is a name only under a generated value's label.
        (
            "\"result_token\": \"Zx9qL2mN8vB4kP7wR3tY\",",
            "Zx9qL2mN8vB4kP7wR3tY",
        ),
        (
            "\"page_token\": \"qWhZkVbNmTrPlSxDgFcJ\"",
            "qWhZkVbNmTrPlSxDgFcJ",
        ),
        ("\"password\": \"CorrectHorse\",", "CorrectHorse"),
        ("db_password: battery_staple", "battery_staple"),
        // A capitalised word alone, or before a comment, is a value.
        ("admin_password: Marigold", "Marigold"),
        ("session_token: Xq7Lm2Vb9Kp4 # rotated", "Xq7Lm2Vb9Kp4"),
        ("webhook_secret: '{Zx9qL2mN8vB4kR7t}x'", "Zx9qL2mN8vB4kR7t"),
        ("auth_token = 'Token Zx9qL2mN8vB4kR7t'", "Zx9qL2mN8vB4kR7t"),
        ("conf.set('db', 'password', 'Tr0ub4dor&3')", "Tr0ub4dor&3"),
        ("    self.secret = zx9ql2mn8vb4kr7t", "zx9ql2mn8vb4kr7t"),
        ("api_token: zxqlmnvbkpwrtydh", "zxqlmnvbkpwrtydh"),
        ("\"resume_token\": \"p4ss\",", "p4ss"),
        ("password: write", "write"),
        ("$secret = Zx9qL2mN8vB4kR7t->", "Zx9qL2mN8vB4kR7t"),
        ("private_key: !Zx9qL2mN8vB4kR7t", "Zx9qL2mN8vB4kR7t"),
        ("the pass is Tr0ub4dor&3", "Tr0ub4dor&3"),
        ("the token is Zx9qL2mN8vB4kR7tY1wE", "Zx9qL2mN8vB4kR7tY1wE"),
        ("api_token: ZXQLMNVBKPWRTYDH", "ZXQLMNVBKPWRTYDH"),
        (
            "user, password = \"admin\", \"Sup3rS3cret!\"",
            "Sup3rS3cret!",
        ),
        // Prose with a comma before the key is no tuple assignment.
        (
            "audited, password=hunter2-very-secret",
            "hunter2-very-secret",
        ),
        ("user, password=hunter2, retrying", "hunter2"),
        (
            "Settings::API_KEY = \"Zx9qL2mN8vB4kR7tY1wE\"",
            "Zx9qL2mN8vB4kR7tY1wE",
        ),
        ("db.password:\n  Tr0ub4dor&3\n", "Tr0ub4dor&3"),
        (
            "Authorization: Bearer Zx9qL2mN8vB4kR7tY1wE",
            "Zx9qL2mN8vB4kR7tY1wE",
        ),
        ("password: \"@@Tr0ub4dor&3@@\"", "Tr0ub4dor&3"),
        ("password = env:Tr0ub4dor&3", "Tr0ub4dor&3"),
        ("arn:aws:x:password=Tr0ub4dor&3", "Tr0ub4dor&3"),
        // A default in a shell expansion is a value.
        ("password: ${DB_PASSWORD:-Tr0ub4dor&3}", "Tr0ub4dor&3"),
        (
            "- token:\n    Zx9qL2mN8vB4kR7tY1wE\n",
            "Zx9qL2mN8vB4kR7tY1wE",
        ),
        ("API_KEY = \"abcdefghijklmnoZ\"", "abcdefghijklmnoZ"),
        ("\"password\": \"^7x.1!3\",", "^7x.1!3"),
        ("db.password.value = Tr0ub4dor&3", "Tr0ub4dor&3"),
        // A describing word ends the key only as its last word; a dotted value
        // with a digit, or of capitals first, may be the secret.
        (
            "token_alg_secret = Zx9qL2mN8vB4kR7tY1wE",
            "Zx9qL2mN8vB4kR7tY1wE",
        ),
        (
            "password_hash_key: \"abcdefgh12345678\"",
            "abcdefgh12345678",
        ),
        ("password = \"my.pass.word9\"", "my.pass.word9"),
        ("login --password Tr0ub4dor&3", "Tr0ub4dor&3"),
        // A person's password may have any shape; a token beside such data is data.
        ("password = \"2024-01-01\"", "2024-01-01"),
        ("password: admin@example.com", "admin@example.com"),
        (
            "token = \"Zx9qL2mN8vB4kR7tY1wE:8080\"",
            "Zx9qL2mN8vB4kR7tY1wE",
        ),
        (
            "token = \"Zx9qL2mN8vB4kR7tY1wE@example.com\"",
            "Zx9qL2mN8vB4kR7tY1wE",
        ),
        ("secret: \"日本語の秘密\"", "日本語の秘密"),
        // A person's password may restate its kind; a token with other words is data.
        ("password = \"password123\"", "password123"),
        ("token = \"tokenZx9qL2mN8vB4kR7t\"", "tokenZx9qL2mN8vB4kR7t"),
        // A member named as a secret, a field in lower case: labels.
        (
            "Secrets.ApiToken = \"Zx9qL2mN8vB4kR7tY1wE\"",
            "Zx9qL2mN8vB4kR7tY1wE",
        ),
        (
            "token.Value = \"Zx9qL2mN8vB4kR7tY1wE\"",
            "Zx9qL2mN8vB4kR7tY1wE",
        ),
        (
            "\"next_token\": \"Zx9q[1].L2mN8vB4kR7tY1wE\"",
            "L2mN8vB4kR7tY1wE",
        ),
        ("ssh -o password=Tr0ub4dor&3 host", "Tr0ub4dor&3"),
        (
            "DB_PASSWORD = \"Spring.Datasource.Password\"",
            "Spring.Datasource.Password",
        ),
        ("settings.db_password = 'Tr0ub4dor&3'", "Tr0ub4dor&3"),
        (
            "define('API_KEY', 'Zx9qL2mN8vB4kR7tY1wE');",
            "Zx9qL2mN8vB4kR7tY1wE",
        ),
    ] {
        let out = scrub(line);
        assert!(!out.text.contains(secret), "{line} -> {}", out.text);
    }
}
