//! The rules, as data: what each kind of secret looks like, the check a match must pass,
//! and the texts each rule must mask (`hits`, the secret between « and ») and must leave
//! alone (`misses`, its near misses). The unit tests run every example of every rule.
//!
//! Secrets with a fixed prefix match at a minimum length rather than an exact one, so a
//! secret cut by an answer's budget is still masked when enough of it shows to matter.

/// What a match must also be to count as a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The pattern says it all (a fixed prefix, a fixed shape).
    Shape,
    /// A value assigned to a secret-like name: it must look random (long enough, letters
    /// mixed with digits or symbols, enough entropy) and not be a placeholder or a UUID.
    Random,
    /// A value in a secret's place (a URL's password): anything but a placeholder.
    NotPlaceholder,
}

pub struct Rule {
    /// The placeholder's type: `[secret:NAME]`.
    pub name: &'static str,
    pub pattern: &'static str,
    /// Which capture group is the secret (0, or a group that did not take part in the
    /// match: the whole match).
    pub group: usize,
    pub check: Check,
    /// Whether the placeholder keeps the secret's last four characters (recognizable, and
    /// useless: only for secrets of 20 characters or more).
    pub tail: bool,
    pub hits: &'static [&'static str],
    pub misses: &'static [&'static str],
}

/// Private key blocks first: a block swallows any token inside it.
pub const RULES: &[Rule] = &[
    Rule {
        name: "ssh-private-key",
        pattern: r"-----BEGIN (?:OPENSSH|SSH2 ENCRYPTED|DSA) PRIVATE KEY-----(?:(?s:.*?)-----END (?:OPENSSH|SSH2 ENCRYPTED|DSA) PRIVATE KEY-----|[A-Za-z0-9+/=\s\\:,-]*)|PuTTY-User-Key-File-\d: (?s:.*?)Private-MAC: [0-9a-f]+",
        group: 0,
        check: Check::Shape,
        tail: false,
        hits: &[
            "key:\n«-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACDnqVd7kLrX2PpN3bC4hYhfVqnoMhSLxZ0fqu5G0yYkAA==\n-----END OPENSSH PRIVATE KEY-----»\ndone",
            r#"{"text":"«-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACDnqVd7kLrX2PpN3bC4hYhfVqnoMhSLxZ0fqu5G0yYkAA==\n»"}"#,
        ],
        misses: &[
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOeqV3uQutfY+k3dsLiFiF9Wqeg yz@host",
            "grep -r 'BEGIN OPENSSH PRIVATE KEY' ~/.ssh",
        ],
    },
    Rule {
        name: "private-key",
        pattern: r"-----BEGIN[A-Z0-9 ]{0,32} PRIVATE KEY(?: BLOCK)?-----(?:(?s:.*?)-----END[A-Z0-9 ]{0,32} PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\:,-]*)|(?:[A-Za-z0-9+/=]{16,}(?:\s|\\n)+)+-----END[A-Z0-9 ]{0,32} PRIVATE KEY(?: BLOCK)?-----",
        group: 0,
        check: Check::Shape,
        tail: false,
        hits: &[
            "«-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA5rK+gqv81RKMGHZEM9YpvujA/C5Q52ryFlwRlOEVHzc0X0AW\n-----END RSA PRIVATE KEY-----»",
            r#""private_key": "«-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC5rK+gqv81RKMGHZEM9YpvujA/C5Q52ry\n-----END PRIVATE KEY-----»\n""#,
            "…lines cut «5rK+gqv81RKMGHZEM9YpvujA/C5Q52ryFlwRlOEVHzc0X0AWIRh/JUqBlIFXZ53N\nMGHZEM9YpvujA/C5Q52ry\n-----END EC PRIVATE KEY-----»",
            "«-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF5rK+gqv81RKMGHZEM9YpvujA\n-----END PGP PRIVATE KEY BLOCK-----»",
        ],
        misses: &[
            "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA5rK+gqv81RKMGHZEM9Y\n-----END PUBLIC KEY-----",
            "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ\n-----END CERTIFICATE-----",
            "openssl genrsa writes a PRIVATE KEY block",
        ],
    },
    Rule {
        name: "aws-access-key",
        pattern: r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b",
        group: 0,
        check: Check::Shape,
        tail: true,
        hits: &["aws_access_key_id = «AKIAUJZDE8GXD6NCF10E»"],
        misses: &["AKIAUJZDE8GXD6", "akiaujzde8gxd6ncf10e", "XAKIAUJZDE8GXD6NCF10E"],
    },
    Rule {
        name: "aws-secret-key",
        pattern: r#"(?i)aws_?secret_?(?:access_?)?key\\*["']?\s*(?::|=|=>)\s*\\*["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+]|$)"#,
        group: 1,
        check: Check::Shape,
        tail: true,
        hits: &[
            "aws_secret_access_key = «El2hpChYgCfrL1spNxnyVmihA+2O76UMFxFkM+R5»",
            r#"{"AWS_SECRET_ACCESS_KEY": "«El2hpChYgCfrL1spNxnyVmihA+2O76UMFxFkM+R5»"}"#,
        ],
        misses: &[
            "El2hpChYgCfrL1spNxnyVmihA+2O76UMFxFkM+R5 alone is just base64",
            "aws_secret_access_key = El2hpChYgCfrL1spNxnyVmihA+2O76UMFxFkM+R5extra",
        ],
    },
    Rule {
        name: "github-token",
        pattern: r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b",
        group: 0,
        check: Check::Shape,
        tail: true,
        hits: &[
            "GITHUB_TOKEN=«ghp_sMehGAkWvj7FAc9QeWJKY40uvSwMFLZDe1f8»",
            "token «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» set",
            "cut at the budget: «gho_sMehGAkWvj7FAc9QeWJKY40uvSwMFLZ»",
        ],
        misses: &["ghp_short", "the ghp_ prefix marks a personal token", "github_pat_ABC"],
    },
    Rule {
        name: "gitlab-token",
        pattern: r"\bgl(?:pat|dt|rt|ptt|ft|imt|oas|cbt|soat)-[A-Za-z0-9_-]{20,}",
        group: 0,
        check: Check::Shape,
        tail: true,
        hits: &["PRIVATE-TOKEN: «glpat-Ku8iS2G8NPRVdD53X83R»"],
        misses: &["glpat-short", "a glpat- token"],
    },
    Rule {
        name: "slack-token",
        pattern: r"\bxox[abposr]-[A-Za-z0-9-]{10,}|https://hooks\.slack\.com/services/[A-Za-z0-9_/]{20,}",
        group: 0,
        check: Check::Shape,
        tail: true,
        hits: &[
            "SLACK_BOT_TOKEN=«xoxb-866661760313-7215901092815-Nbe3nNyjOq9wMxEhh2FDEEtf»",
            "post to «https://hooks.slack.com/services/T0866661/B7215901/Nbe3nNyjOq9wMxEhh2FDEEtf»",
        ],
        misses: &["xoxb-123", "https://hooks.slack.com/services/"],
    },
    Rule {
        name: "stripe-key",
        pattern: r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,}",
        group: 0,
        check: Check::Shape,
        tail: true,
        hits: &["Stripe.api_key = '«sk_live_jgVvVqE1SkHbn88HxjSI6bWH»'"],
        misses: &["pk_live_jgVvVqE1SkHbn88HxjSI6bWH", "sk_live_short"],
    },
    Rule {
        name: "anthropic-key",
        pattern: r"\bsk-ant-[A-Za-z0-9_-]{20,}",
        group: 0,
        check: Check::Shape,
        tail: true,
        hits: &["ANTHROPIC_API_KEY=«sk-ant-api03-MlHUvTCQCyEZDz-TddJ8HyS5SUkCnD8zRA9a9SkpXz9w3QlY7Zkuvqdt7s8Stqcbnr3yBdGBLEPH1qhT61qtc4xatws8pAA»"],
        misses: &["sk-ant-api03-", "the sk-ant- prefix"],
    },
    Rule {
        name: "openai-key",
        pattern: r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
        group: 0,
        check: Check::Random,
        tail: true,
        hits: &[
            "OPENAI_API_KEY=«sk-proj-JduRHHJEYXg4JdpmrcXgGCJbW56eCuNGMGmSrCGIZEG8pSH4»",
            "key «sk-JduRHHJEYXg4JdpmrcXgGCJbW56eCuNGMGmSrCGI»",
        ],
        misses: &[
            "sk-learn-and-other-long-package-names",
            "task-JduRHHJEYXg4JdpmrcXgGCJbW56eCuNGMGmSrCGI",
        ],
    },
    Rule {
        name: "google-api-key",
        pattern: r"\bAIza[0-9A-Za-z_-]{35}",
        group: 0,
        check: Check::Shape,
        tail: true,
        hits: &["?key=«AIzaHz5r1pY4OjE2jBMptUsGr7CmY_uCu3ZR1zT»&q=1"],
        misses: &["AIzaHz5r1pY4", "the AIza prefix"],
    },
    Rule {
        name: "huggingface-token",
        pattern: r"\bhf_[A-Za-z0-9]{30,}\b",
        group: 0,
        check: Check::Shape,
        tail: true,
        hits: &["HF_TOKEN=«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»"],
        misses: &["hf_hub_download", "hf_transfer enabled"],
    },
    Rule {
        name: "npm-token",
        pattern: r"\bnpm_[A-Za-z0-9]{36}\b",
        group: 0,
        check: Check::Shape,
        tail: true,
        hits: &["//registry.npmjs.org/:_authToken=«npm_zjI6GKFSufrdZSlB5er8bOfZqfM2oeq3hDav»"],
        misses: &["npm_config_cache", "npm_lifecycle_event=test"],
    },
    Rule {
        name: "pypi-token",
        pattern: r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}",
        group: 0,
        check: Check::Shape,
        tail: true,
        hits: &["password = «pypi-AgEIcHlwaS5vcmc1IqfEouHgxzNNAL5wIScGebcy8F5n3-YNBDRzrZSgqbjG3uhkWKFLf6xuI5a»"],
        misses: &["pypi-AgEIcHlwaS5vcmc", "pypi-simple-index"],
    },
    Rule {
        name: "twilio-key",
        pattern: r#"\bSK[0-9a-f]{32}\b|(?i)twilio\w*?_?(?:auth_?)?token\\*["']?\s*(?::|=)\s*\\*["']?([0-9a-f]{32})\b"#,
        group: 1,
        check: Check::Shape,
        tail: true,
        hits: &[
            "api key «SK8baa7196b50ac2f86702824c1c099724»",
            "TWILIO_AUTH_TOKEN=«caf4941d4072014b3ce107f80e222f82»",
        ],
        misses: &["SK8baa7196", "account AC8baa7196b50ac2f86702824c1c099724"],
    },
    Rule {
        name: "sendgrid-key",
        pattern: r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",
        group: 0,
        check: Check::Shape,
        tail: true,
        hits: &["SENDGRID_API_KEY=«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»"],
        misses: &["SG.short.value", "module SG.Utils.Format"],
    },
    Rule {
        name: "jwt",
        pattern: r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
        group: 0,
        check: Check::Shape,
        tail: true,
        hits: &["Cookie: session=«eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0.s1SWOpQaPRYpzbLGViYXjU2JgJngKtFI3OyV2dZAkg0»"],
        misses: &[
            "header eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9 alone",
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.notatoken",
        ],
    },
    Rule {
        name: "url-credentials",
        pattern: r#"\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s:/@"'<>]{1,64}:([^\s@/"'<>]{3,128})@[A-Za-z0-9\[]"#,
        group: 1,
        check: Check::NotPlaceholder,
        tail: false,
        hits: &[
            "DATABASE_URL=postgres://app:«Xk9mQ2vL8pZ»@db.internal:5432/app",
            "git clone https://oauth2:«gh0-s3cret-t0ken»@gitlab.example.com/x.git",
        ],
        misses: &[
            "https://user@example.com/repo",
            "http://localhost:8080/path@v2",
            "postgres://app:${DB_PASSWORD}@db:5432/app",
            "redis://user:<password>@host:6379",
            "git@github.com:owner/repo.git",
        ],
    },
    Rule {
        name: "bearer-token",
        pattern: r"(?i)\b(?:authorization\W{0,16}(?:bearer|token|basic)|bearer)\s+([A-Za-z0-9._~+/=-]{16,})",
        group: 1,
        check: Check::Random,
        tail: true,
        hits: &[
            "curl -H 'Authorization: Bearer «cqe28.ajY75FnCttn6kfaqDeMqG3omjMyXHCabM6»' https://api",
            r#"headers: {"Authorization": "Token «cqe28ajY75FnCttn6kfaqDeMq»"}"#,
        ],
        misses: &[
            "Authorization: Bearer ${API_TOKEN}",
            "the bearer of bad news arrived yesterday",
            "Authorization: Bearer <token>",
        ],
    },
    Rule {
        name: "secret-assignment",
        pattern: r#"(?i)\b[A-Za-z0-9_.-]*?(?:password|passwd|passphrase|secret[_-]?key|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|client[_-]?secret|auth[_-]?token|credentials?)(?:_[A-Za-z0-9]+)*\\*["']?\s*(?::=|=>|=|:)\s*\\*["'`]?([^\s"'`,;&\\<>\[\]{}()|]{8,200})"#,
        group: 1,
        check: Check::Random,
        tail: true,
        hits: &[
            "export OPENROUTER_TOKEN=«Zr8kQ2mX9vLp4TnW»",
            "DB_PASSWORD=«JOF8EFd0Nhcy#1»",
            r#"{"client_secret": "«9f2cA81bE7d04c3fB2a6»"}"#,
            "password: «P@ssw0rd-2024!»",
            r#"api_key = "«a1b2c3d4e5f6g7h8i9j0»""#,
            r#"text: "secretKey=\"«Zr8kQ2mX9vLp4TnW»\"""#,
        ],
        misses: &[
            "password: string",
            "max_tokens: 4096",
            "\"input_tokens\": 123456789",
            "token = self.tokenizer.encode(text)",
            "password = os.environ.get(\"DB_PASSWORD\")",
            "api_key: process.env.OPENAI_API_KEY",
            "secret: ${{ secrets.DEPLOY_KEY }}",
            "session_token = 3f1e2d4c-5b6a-4978-8a9b-0c1d2e3f4a5b",
            "password = \"your-password-here\"",
            "token: CancellationToken",
            "tokenizer=bert-base-uncased2",
            "TOKEN=xxxxxxxxxxxxxxxxxxxx",
            "PWD=/home/dev/project2",
            "token_url: https://oauth2.googleapis.com/token",
            "credentials_file = ./config/creds2.json",
            "https://api.nasa.gov/planetary/apod?api_key=DEMO_KEY&date=2024-10-15",
            "cfg.S3.SecretKey = s3Secret",
            "SecretKey:        info.TDSCS3SecretKey,",
        ],
    },
];
