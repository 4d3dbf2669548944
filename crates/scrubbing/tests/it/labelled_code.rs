//! Labelled code that holds no secret, written for issue 46.4 from the shapes code
//! takes (not from any corpus's failures): a value that is a variable, a constant, a
//! field path, a call, a type, a template, a resource's name, a rule list, a short
//! number or a path where a secret's label is. Each line comes back unchanged; the
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
        ("token = Bearer_Zx9qL2mN8vB4kP7w", "Bearer_Zx9qL2mN8vB4kP7w"),
    ] {
        let out = scrub(line);
        assert!(!out.text.contains(secret), "{line} -> {}", out.text);
    }
}
