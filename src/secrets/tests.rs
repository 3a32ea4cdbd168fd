//! Secret detection's unit tests.

use super::*;

fn kinds(text: &str) -> Vec<(String, &str)> {
    let detector = Detector::new(&sample_rules()).unwrap();
    detector
        .find(text.as_bytes())
        .into_iter()
        .map(|f| (detector.kind(f.kind).to_owned(), &text[f.start..f.end]))
        .collect()
}

/// Installed rules of the shapes the Python installer gives (translated lookarounds,
/// groups, every check).
fn sample_rules() -> Vec<ExternalRule> {
    let rule =
        |kind: &str, pattern: &str, check: Check, group: bool, follow: Option<&str>| ExternalRule {
            kind: kind.to_owned(),
            pattern: pattern.to_owned(),
            check,
            group,
            not_followed_by: follow.map(str::to_owned),
        };
    vec![
        rule(
            "AWSKeyDetector",
            "(?:A3T[A-Z0-9]|ABIA|ACCA|AKIA|ASIA)[0-9A-Z]{16}",
            Check::Token,
            false,
            None,
        ),
        rule(
            "PrivateKeyDetector",
            "BEGIN RSA PRIVATE KEY",
            Check::PrivateKey,
            false,
            None,
        ),
        rule(
            "JwtTokenDetector",
            r"eyJ[A-Za-z0-9-_=]+\.[A-Za-z0-9-_=]+\.?[A-Za-z0-9-_.+/=]*?",
            Check::Jwt,
            false,
            None,
        ),
        rule(
            "GitLabTokenDetector",
            r"(glpat|gldt)-[A-Za-z0-9_\-]{20,50}",
            Check::Token,
            false,
            Some(r"[A-Za-z0-9_]"),
        ),
        rule(
            "GitHubTokenDetector",
            "(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{36}",
            Check::Token,
            false,
            None,
        ),
        rule(
            "BasicAuthDetector",
            r"://[^:/\?\#\[\]@!\$\&'\(\)\*\+,;=\s]+:([^:/\?\#\[\]@!\$\&'\(\)\*\+,;=\s]+)@",
            Check::UrlPassword,
            true,
            None,
        ),
    ]
}

#[test]
fn a_rule_that_does_not_compile_is_named() {
    let bad = ExternalRule {
        kind: "X".into(),
        pattern: "(?=a)".into(),
        check: Check::Token,
        group: false,
        not_followed_by: None,
    };
    let err = Detector::new(&[bad]).err().unwrap();
    assert!(err.contains("the X rule"), "{err}");
}

#[test]
fn aws_key_id_exact_span() {
    let key = format!("AKIA{}", "Q7".repeat(8));
    let text = format!("KEY = \"{key}\"\n");
    assert_eq!(
        kinds(&text),
        vec![("AWSKeyDetector".to_owned(), key.as_str())]
    );
    assert_eq!(kinds(&format!("X{key}")), vec![]);
    assert_eq!(kinds(&format!("{key}Z")), vec![]);
    assert_eq!(kinds("AKIAIOSFODNN7EXAMPLE"), vec![]);
}

#[test]
fn a_private_key_block_is_one_finding() {
    let block =
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabc+/=\n-----END RSA PRIVATE KEY-----";
    let text = format!("k = \"\"\"{block}\"\"\"\n");
    assert_eq!(kinds(&text), vec![("PrivateKeyDetector".to_owned(), block)]);
}

#[test]
fn a_jwt_keeps_its_signature() {
    let token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
    assert_eq!(
        kinds(&format!("t = '{token}'")),
        vec![("JwtTokenDetector".to_owned(), token)]
    );
}

#[test]
fn a_translated_lookahead_rejects_a_longer_word() {
    let token = format!("glpat-{}", "xY9z".repeat(5));
    assert_eq!(
        kinds(&format!("t: {token}\n")),
        vec![("GitLabTokenDetector".to_owned(), token.as_str())]
    );
    assert_eq!(kinds(&format!("t: {token}{}\n", "Q".repeat(40))), vec![]);
}

#[test]
fn url_passwords_and_their_placeholders() {
    assert_eq!(
        kinds("REDIS = 'redis://:Xk9mQ2vL@cache'\n"),
        vec![("url-password".to_owned(), "Xk9mQ2vL")]
    );
    assert_eq!(
        kinds("redis://:pw@host"),
        vec![("url-password".to_owned(), "pw")]
    );
    assert_eq!(kinds("# e.g. 'ftp://foo:bar@ftp.example.org/'\n"), vec![]);
    assert_eq!(kinds("postgres://user:pass@db/x"), vec![]);
    assert_eq!(kinds("postgres://admin:Zq8vX2mK@db.example.com/x"), vec![]);
    assert_eq!(kinds("postgres://admin:${DB_PASSWORD}@db/x"), vec![]);
    assert_eq!(kinds("postgres://admin:<password>@db/x"), vec![]);
    assert_eq!(
        kinds("postgres://admin:Zq8vX2mK@db.internal/x"),
        vec![("BasicAuthDetector".to_owned(), "Zq8vX2mK")]
    );
}

#[test]
fn generic_assignments() {
    assert_eq!(kinds("password = \"changeme\"\n"), vec![]);
    assert_eq!(kinds("api_key = \"${API_KEY}\"\n"), vec![]);
    assert_eq!(kinds("api_key = \"your_api_key_here\"\n"), vec![]);
    assert_eq!(kinds("password = get_password()\n"), vec![]);
    assert_eq!(kinds("token = os.environ['TOKEN']\n"), vec![]);
    assert_eq!(
        kinds("db_password = \"Zq8vX2mK9pL4rT7w\"\n"),
        vec![("generic-password".to_owned(), "Zq8vX2mK9pL4rT7w")]
    );
    // A placeholder word inside a value does not make it a placeholder.
    assert_eq!(
        kinds("password = \"mytestvalue9Zq\"\n"),
        vec![("generic-password".to_owned(), "mytestvalue9Zq")]
    );
    // Short and all-letter passwords.
    assert_eq!(
        kinds("password = \"hunter2\"\n"),
        vec![("generic-password".to_owned(), "hunter2")]
    );
    assert_eq!(
        kinds("PASSWORD = 'qzvxkbnwmjhtplrf'\n"),
        vec![("generic-password".to_owned(), "qzvxkbnwmjhtplrf")]
    );
    assert_eq!(
        kinds("DB_PASSWORD=hunter22x\n"),
        vec![("generic-secret".to_owned(), "hunter22x")]
    );
}

#[test]
fn an_assignment_inside_a_rejected_value_is_found() {
    assert_eq!(
        kinds("url = '/login?token=abc&password=Zq8vX2mK9pL4rT7w'\n"),
        vec![("generic-secret".to_owned(), "Zq8vX2mK9pL4rT7w")]
    );
    assert_eq!(
        kinds("token=x:pwd=Zq8vX2mK9pL4rT7w"),
        vec![("generic-secret".to_owned(), "Zq8vX2mK9pL4rT7w")]
    );
}

#[test]
fn credentials_in_code() {
    // base64("alice:Zq8vX2mK")
    assert_eq!(
        kinds("-H 'Authorization: Basic YWxpY2U6WnE4dlgybUs='"),
        vec![("basic-auth-header".to_owned(), "YWxpY2U6WnE4dlgybUs=")]
    );
    // base64("user:pass")
    assert_eq!(kinds("Authorization: Basic dXNlcjpwYXNz"), vec![]);
    assert_eq!(
        kinds("curl -s -u alice:Zq8vX2mK https://api.internal/x"),
        vec![("command-line-password".to_owned(), "Zq8vX2mK")]
    );
    assert_eq!(
        kinds("requests.get(url, auth=('alice', 'Zq8vX2mK'))"),
        vec![("auth-tuple".to_owned(), "Zq8vX2mK")]
    );
    assert_eq!(kinds("requests.get(url, auth=('user', 'pass'))"), vec![]);
}

#[test]
fn adversarial_lines_are_linear() {
    // A quadratic search would take minutes on these; a linear one milliseconds.
    for unit in [
        "-sk",
        "sk-",
        "AKIA",
        "xoxb-",
        "password=",
        "token=token",
        "pwd:x",
        "a://b:",
        "eyJ.",
        "-----BEGIN ",
        "BEGIN RSA PRIVATE KEY",
        "curl -u ",
        "auth=('",
        "Authorization: Basic ",
        "&sig=",
        "LS0tLS1CRUdJTi",
        "eyJhbGciOiJIUzI1NiJ9.",
        "://a:b",
        "mysql -u ",
        "mysql -p-",
        "sshpass -e ",
        "docker login -u ",
        "redis-cli -a -",
        "redis-cli -a x9Kq2Lm8Zw ",
        " -a x9Kq2Lm8Zw",
        "mysql -px9Kq2Lm8Zw ",
        "htpasswd -b ",
        "htpasswd -n -b -C 1 ",
        "sqlcmd -P ",
        "ldapsearch ",
        "--password --",
        " -passin pass:",
        "aws_secret_access_key ",
        "AKIAQ7Q7Q7Q7Q7Q7Q7Q7: ",
        "%3D",
        "token%3Da1&b",
        "ghp_aB3",
        "npm_%2F",
    ] {
        let text = unit.repeat(1_000_000 / unit.len());
        let detector = Detector::new(&sample_rules()).unwrap();
        let started = std::time::Instant::now();
        let _ = detector.find(text.as_bytes());
        assert!(started.elapsed().as_secs() < 30, "{unit}");
    }
}

#[test]
fn placeholders() {
    for s in [
        "changeme",
        "your_api_key_here",
        "test123",
        "xxxxxxxx",
        "<password>",
        "${VAR}",
        "foo",
        "YourApiKey",
    ] {
        assert!(placeholder(s.as_bytes()), "{s}");
    }
    for s in ["mytestvalue9Zq", "hunter2", "Zq8vX2mK", "pw"] {
        assert!(!placeholder(s.as_bytes()), "{s}");
    }
}

#[test]
fn base64_decodes() {
    assert_eq!(base64_decode(b"dXNlcjpwYXNz").unwrap(), b"user:pass");
    assert_eq!(
        base64_decode(b"YWxpY2U6WnE4dlgybUs=").unwrap(),
        b"alice:Zq8vX2mK"
    );
    assert!(base64_decode(b"a b").is_none());
}

#[test]
fn entropy_of_uniform_bytes() {
    assert!((entropy(b"abcd") - 2.0).abs() < 1e-12);
    assert_eq!(entropy(b""), 0.0);
}

/// `text` with each finding replaced by `[REDACTED: kind]`.
fn redacted(text: &str) -> String {
    let detector = Detector::new(&sample_rules()).unwrap();
    let mut out = String::new();
    let mut at = 0;
    for f in detector.find(text.as_bytes()) {
        out.push_str(&text[at..f.start]);
        out.push_str(&format!("[REDACTED: {}]", detector.kind(f.kind)));
        at = f.end;
    }
    out.push_str(&text[at..]);
    out
}

/// Assert that each `(text, expected)` redacts to `expected`.
fn assert_redacts(cases: &[(String, String)]) {
    for (text, expected) in cases {
        assert_eq!(&redacted(text), expected, "{text}");
    }
}

/// Assert that none of `texts` holds a secret.
fn assert_clean(texts: &[String]) {
    for text in texts {
        assert_eq!(kinds(text), vec![], "{text}");
    }
}

/// AWS's documented example secret access key, assembled so that no line here is one.
const AWS_SECRET: &str = concat!("wJalrXUtnFEMI/K7MDENG/", "bPxRfiCYEXAMPLEKEY");
/// A GitHub token body: 36 letters and digits.
const GH_BODY: &str = concat!("aB3dE5fG7hJ9kL1mN3", "pQ5rS7tU9vW1xY3zA5");
const PW: &str = concat!("S3cr3t", "Passw0rd");

fn cases(pairs: &[(&str, &str)], kind: &str) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(text, expected)| {
            (
                text.replace("{S}", AWS_SECRET).replace("{P}", PW),
                expected.replace("{R}", &format!("[REDACTED: {kind}]")),
            )
        })
        .collect()
}

#[test]
fn an_aws_secret_after_its_name_and_blanks_is_found() {
    assert_redacts(&cases(
        &[
            (
                "aws configure set aws_secret_access_key {S}",
                "aws configure set aws_secret_access_key {R}",
            ),
            (
                "export AWS_SECRET_ACCESS_KEY {S}",
                "export AWS_SECRET_ACCESS_KEY {R}",
            ),
            (
                "setenv AWS_SECRET_ACCESS_KEY {S}\n",
                "setenv AWS_SECRET_ACCESS_KEY {R}\n",
            ),
            (
                "set -x AWS_SECRET_ACCESS_KEY '{S}'",
                "set -x AWS_SECRET_ACCESS_KEY '{R}'",
            ),
            ("--aws-secret-access-key {S}", "--aws-secret-access-key {R}"),
            ("--aws-secret-access-key={S}", "--aws-secret-access-key={R}"),
            (
                "aws-secret-access-key: {S}\n",
                "aws-secret-access-key: {R}\n",
            ),
            ("--secret-access-key \"{S}\"", "--secret-access-key \"{R}\""),
            ("SecretAccessKey\t{S}", "SecretAccessKey\t{R}"),
            ("aws_secret_access_key%3D{S}", "aws_secret_access_key%3D{R}"),
        ],
        "aws-secret-access-key",
    ));
    assert_clean(&[
        "aws configure list".to_owned(),
        "aws configure get aws_secret_access_key".to_owned(),
        "export AWS_SECRET_ACCESS_KEY\n".to_owned(),
        "aws_secret_access_key = os.environ['AWS_SECRET_ACCESS_KEY']".to_owned(),
        "--aws-secret-access-key YOUR_SECRET_HERE".to_owned(),
        format!("aws_secret_access_key {}", "x".repeat(40)),
        // 41 characters: not an AWS secret access key.
        format!("aws_secret_access_key {AWS_SECRET}Q"),
    ]);
}

#[test]
fn an_aws_secret_glued_to_its_key_id_is_found() {
    let id = format!("AKIA{}", "Q7".repeat(8));
    let cases = [
        // AWS's documented example id is no secret; the secret after it is.
        (
            format!("AKIAIOSFODNN7EXAMPLE:{AWS_SECRET}"),
            "AKIAIOSFODNN7EXAMPLE:{R}".to_owned(),
        ),
        (
            format!("{id}:{AWS_SECRET}"),
            "[REDACTED: AWSKeyDetector]:{R}".to_owned(),
        ),
        (
            format!("alice,,{id},{AWS_SECRET}\n"),
            "alice,,[REDACTED: AWSKeyDetector],{R}\n".to_owned(),
        ),
        (
            format!("{id} {AWS_SECRET}"),
            "[REDACTED: AWSKeyDetector] {R}".to_owned(),
        ),
        (
            format!("\"{id}\": \"{AWS_SECRET}\""),
            "\"[REDACTED: AWSKeyDetector]\": \"{R}\"".to_owned(),
        ),
    ];
    let cases: Vec<(String, String)> = cases
        .into_iter()
        .map(|(t, e)| (t, e.replace("{R}", "[REDACTED: aws-secret-access-key]")))
        .collect();
    assert_redacts(&cases);
    assert_clean(&[
        format!("AKIAIOSFODNN7EXAMPLE:{}", "a".repeat(40)),
        format!("AKIAIOSFODNN7EXAMPLE:{AWS_SECRET}Q"),
        "AKIAIOSFODNN7EXAMPLE: see the docs".to_owned(),
    ]);
}

#[test]
fn passwords_on_the_command_lines_of_other_tools_are_found() {
    assert_redacts(&cases(
        &[
            ("mysql -u root -p{P} db", "mysql -u root -p{R} db"),
            (
                "mysql -h db -P 3306 -uroot -p'{P}' shop",
                "mysql -h db -P 3306 -uroot -p'{R}' shop",
            ),
            ("mysqldump --password={P} db", "mysqldump --password={R} db"),
            ("mysql --password {P}", "mysql --password {R}"),
            (
                "mariadb-dump -uadmin -p\"{P}\" --all-databases",
                "mariadb-dump -uadmin -p\"{R}\" --all-databases",
            ),
            ("sshpass -p '{P}' ssh host", "sshpass -p '{R}' ssh host"),
            (
                "sshpass -p{P} ssh -p 2222 host",
                "sshpass -p{R} ssh -p 2222 host",
            ),
            ("redis-cli -a {P}", "redis-cli -a {R}"),
            (
                "redis-cli -h cache -p 6379 -a '{P}' ping",
                "redis-cli -h cache -p 6379 -a '{R}' ping",
            ),
            ("redis-cli --pass {P} ping", "redis-cli --pass {R} ping"),
            (
                "docker login -u bob -p {P} registry.internal",
                "docker login -u bob -p {R} registry.internal",
            ),
            (
                "mongosh -u admin -p {P} --authenticationDatabase admin",
                "mongosh -u admin -p {R} --authenticationDatabase admin",
            ),
            (
                "ldapsearch -D cn=admin -w {P} -b dc=corp",
                "ldapsearch -D cn=admin -w {R} -b dc=corp",
            ),
            (
                "openssl pkcs12 -export -passout pass:{P} -out k.p12",
                "openssl pkcs12 -export -passout pass:{R} -out k.p12",
            ),
            (
                "wget --ftp-password={P} ftp://files/x",
                "wget --ftp-password={R} ftp://files/x",
            ),
            (
                "svn checkout --username bob --password {P} svn://repo",
                "svn checkout --username bob --password {R} svn://repo",
            ),
        ],
        "command-line-password",
    ));
    // Already found as assignments.
    assert_redacts(&cases(
        &[
            ("PGPASSWORD={P} psql -h db", "PGPASSWORD={R} psql -h db"),
            ("MYSQL_PWD={P} mysql -uroot", "MYSQL_PWD={R} mysql -uroot"),
        ],
        "generic-secret",
    ));
    assert_clean(
        &[
            "mysql -p",
            "mysql -u root -p db",
            "mysql -uroot -p$MYSQL_ROOT_PASSWORD db",
            "mysql -uroot -pYOUR_PASSWORD db",
            "mysql -uroot -pxxxx db",
            "mysql -P 3306 -h db",
            "mysql --password",
            "mysql -u root db | grep -pattern",
            "docker run -p 8080:80 nginx",
            "ssh -p 2222 host",
            "nc -l -p 8080",
            "sshpass -f ~/.pw ssh -p 2222 host",
            "sshpass -e ssh -p 2222 host",
            "redis-cli -p 6379 ping",
            "redis-cli -a YOUR_SECRET_HERE",
            "docker login --password-stdin registry.internal",
            "  --password TEXT  The password to use.",
            "  --password PASSWORD",
            "  --password <password>",
            "openssl pkcs12 -passin pass:$PW -in k.p12",
            "pytest -p no:cacheprovider",
        ]
        .map(str::to_owned),
    );
}

#[test]
fn percent_encoded_assignments_and_tokens_are_found() {
    let gh = format!("ghp_{GH_BODY}");
    let npm = format!("npm_{GH_BODY}");
    let aws_id = format!("AKIA{}", "Q7".repeat(8));
    assert_redacts(&[
        (
            format!("https://x.example/cb?token%3D{gh}"),
            "https://x.example/cb?token%3D[REDACTED: GitHubTokenDetector]".to_owned(),
        ),
        (
            format!("next=%2Fcb%3Fauth%3d{gh}%26x%3D1"),
            "next=%2Fcb%3Fauth%3d[REDACTED: GitHubTokenDetector]%26x%3D1".to_owned(),
        ),
        (
            format!("q=%22{npm}%22"),
            "q=%22[REDACTED: npm-token]%22".to_owned(),
        ),
        (
            format!("id%3D{aws_id}%26"),
            "id%3D[REDACTED: AWSKeyDetector]%26".to_owned(),
        ),
        (
            format!("password%3D{PW}%26user%3Dbob"),
            "password%3D[REDACTED: generic-secret]%26user%3Dbob".to_owned(),
        ),
        (
            format!("a%3D1%26PASSWORD%3d{PW}"),
            "a%3D1%26PASSWORD%3d[REDACTED: generic-secret]".to_owned(),
        ),
        (
            format!("password={PW}&user=bob"),
            "password=[REDACTED: generic-secret]&user=bob".to_owned(),
        ),
        (
            format!("/login?token=abc&password={PW}&next=%2F"),
            "/login?token=abc&password=[REDACTED: generic-secret]&next=%2F".to_owned(),
        ),
    ]);
    assert_clean(
        &[
            "redirect_uri%3Dhttps%3A%2F%2Fauth.internal%2Fcb%26token_type%3Dbearer",
            "token_url%3Dhttps%3A%2F%2Fauth.internal%2Fv1",
            "password%3D%24%7BPASSWORD%7D",
            "password%3Dchangeme%26user%3Dbob",
        ]
        .map(str::to_owned),
    );
}

#[test]
fn a_github_token_glued_to_more_letters_is_redacted_whole() {
    let mut cases: Vec<(String, String)> = Vec::new();
    for prefix in ["ghp", "gho", "ghu", "ghs", "ghr"] {
        cases.push((
            format!("{prefix}_{GH_BODY}abc"),
            "[REDACTED: github-token]".to_owned(),
        ));
    }
    cases.extend([
        (
            format!("x=ghp_{GH_BODY}abcdefghijklmnop;"),
            "x=[REDACTED: github-token];".to_owned(),
        ),
        (
            format!("t: ghp_{GH_BODY}_extra\n"),
            "t: [REDACTED: GitHubTokenDetector]_extra\n".to_owned(),
        ),
        (
            format!("my_ghp_{GH_BODY}Zz9"),
            "my_[REDACTED: github-token]".to_owned(),
        ),
        (
            format!("ghp_{GH_BODY}"),
            "[REDACTED: GitHubTokenDetector]".to_owned(),
        ),
    ]);
    assert_redacts(&cases);
    assert_clean(&[
        "a personal access token starts with ghp_ and has 36 more characters".to_owned(),
        "ghp_token_prefix_for_personal_access_tokens_v".to_owned(),
        "const ghp_personalAccessTokenPrefixAndTheRestOfIt = 1".to_owned(),
        format!("ghp_{}", &GH_BODY[..35]),
    ]);
}

#[test]
fn other_prefixed_tokens_glued_to_more_letters_are_redacted_whole() {
    let npm = format!("npm_{GH_BODY}");
    let google = format!("AIza{}", &format!("{GH_BODY}Q7x")[..35]);
    let shopify = format!("shpat_{}", "a1b2c3d4".repeat(4));
    let digitalocean = format!("dop_v1_{}", "a1b2c3d4".repeat(8));
    let hf = format!("hf_{}", "aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgH");
    assert_redacts(&[
        (format!("{npm}abc"), "[REDACTED: npm-token]".to_owned()),
        (
            format!("k={google}xyz"),
            "k=[REDACTED: google-api-key]".to_owned(),
        ),
        (
            format!("{shopify}xyz"),
            "[REDACTED: shopify-token]".to_owned(),
        ),
        (
            format!("{shopify}abc"),
            "[REDACTED: shopify-token]".to_owned(),
        ),
        (
            format!("{digitalocean}xyz"),
            "[REDACTED: digitalocean-token]".to_owned(),
        ),
        (
            format!("{hf}AbCdEfGh9"),
            "[REDACTED: huggingface-token]".to_owned(),
        ),
    ]);
    assert_clean(&[
        format!("hf_{}", "a".repeat(60)),
        format!("{}xyz", &shopify[..shopify.len() - 1]),
        // Mailgun's prefix `key-` also starts names of hex digests: only 32 exactly.
        format!("key-{}", "0123456789abcdef".repeat(4)),
    ]);
}

#[test]
fn keystore_htpasswd_openssl_vault_and_header_secrets_are_found() {
    assert_redacts(&cases(
        &[
            (
                "keytool -list -keystore k.jks -storepass {P}",
                "keytool -list -keystore k.jks -storepass {R}",
            ),
            (
                "keytool -importkeystore -srcstorepass '{P}' -deststorepass {P} -destkeypass \"{P}\"",
                "keytool -importkeystore -srcstorepass '{R}' -deststorepass {R} -destkeypass \"{R}\"",
            ),
            (
                "jarsigner -keystore k.jks -storepass {P} app.jar alias",
                "jarsigner -keystore k.jks -storepass {R} app.jar alias",
            ),
            (
                "htpasswd -b .htpasswd bob {P}",
                "htpasswd -b .htpasswd bob {R}",
            ),
            (
                "htpasswd -cbB /etc/nginx/users alice '{P}'",
                "htpasswd -cbB /etc/nginx/users alice '{R}'",
            ),
            ("htpasswd -nb bob {P}", "htpasswd -nb bob {R}"),
            (
                "openssl enc -aes-256-cbc -k {P} -in a -out b",
                "openssl enc -aes-256-cbc -k {R} -in a -out b",
            ),
        ],
        "command-line-password",
    ));
    let vault = concat!("s.", "Xk9Lm2Pq7Rt4Wv8Yz3Ab6Cd1");
    assert_redacts(&[
        (
            format!("vault login {vault}"),
            "vault login [REDACTED: command-line-password]".to_owned(),
        ),
        (
            format!("vault login -address=https://v:8200 {vault}"),
            "vault login -address=https://v:8200 [REDACTED: command-line-password]".to_owned(),
        ),
    ]);
    let key = concat!("k3Yd8Fq2Lm9", "Xw4Zr7Tb1Nc6");
    assert_redacts(&[
        (
            format!("curl -H 'X-Api-Key: {key}' https://api"),
            "curl -H 'X-Api-Key: [REDACTED: api-key-header]' https://api".to_owned(),
        ),
        (
            format!("x-auth-token: {key}"),
            "x-auth-token: [REDACTED: api-key-header]".to_owned(),
        ),
        (
            format!("{{\"X-API-KEY\": \"{key}\"}}"),
            "{\"X-API-KEY\": \"[REDACTED: api-key-header]\"}".to_owned(),
        ),
    ]);
    assert_clean(
        &[
            "keytool -list -keystore k.jks -storepass:env STOREPASS",
            "keytool -list -keystore k.jks -storepass $STOREPASS",
            "htpasswd -c .htpasswd bob",
            "htpasswd -B .htpasswd bob",
            "htpasswd -b .htpasswd bob $PASSWORD",
            "openssl enc -aes-256-cbc -kfile pass.txt -in a",
            "openssl enc -aes-256-cbc -k $KEY -in a",
            "vault login -method=userpass username=bob",
            "vault login s.short",
            "X-Api-Key: <your-api-key>",
            "X-Api-Key: YOUR_API_KEY_HERE",
            "api-key: ${API_KEY}",
            "the x-api-key: header carries the key",
        ]
        .map(str::to_owned),
    );
}

#[test]
fn a_repeated_password_option_is_read_every_time() {
    assert_redacts(&cases(
        &[
            ("redis-cli -a {P} -a {P}", "redis-cli -a {R} -a {R}"),
            (
                "redis-cli -a {P} -h cache -a '{P}' -a{P} ping",
                "redis-cli -a {R} -h cache -a '{R}' -a{R} ping",
            ),
            (
                "redis-cli -a $PW -a {P} -a {P}",
                "redis-cli -a $PW -a {R} -a {R}",
            ),
            (
                "docker login -p {P} -u bob -p {P} registry",
                "docker login -p {R} -u bob -p {R} registry",
            ),
            (
                "mysql -p{P} -u root -p{P} db",
                "mysql -p{R} -u root -p{R} db",
            ),
            (
                "openssl enc -k {P} -aes-256-cbc -k {P} -in a",
                "openssl enc -k {R} -aes-256-cbc -k {R} -in a",
            ),
            (
                "ldapsearch -w {P} -b dc=corp -w {P}",
                "ldapsearch -w {R} -b dc=corp -w {R}",
            ),
        ],
        "command-line-password",
    ));
    // The command ends at a pipe, `;`, `&` or the line's end; an option of the next command
    // or of a glued-only option given with a blank is no password.
    assert_clean(
        &[
            format!("redis-cli -a $PW; nc -a {PW}"),
            format!("mysql -p$PW db -p {PW}"),
            format!("redis-cli -a $PW | grep -a {PW}"),
            format!("redis-cli -a $PW\ngrep -a {PW}"),
        ]
        .map(|s| s.clone()),
    );
}

#[test]
fn htpasswd_sqlcmd_zip_and_dashed_names_are_found() {
    assert_redacts(&cases(
        &[
            (
                "htpasswd -b -B .htpasswd bob {P}",
                "htpasswd -b -B .htpasswd bob {R}",
            ),
            (
                "htpasswd -B -C 10 -b /etc/users alice {P}",
                "htpasswd -B -C 10 -b /etc/users alice {R}",
            ),
            ("htpasswd -n -b bob {P}", "htpasswd -n -b bob {R}"),
            ("htpasswd -b -n -B bob '{P}'", "htpasswd -b -n -B bob '{R}'"),
            (
                "sqlcmd -S db -U sa -P {P} -Q 'select 1'",
                "sqlcmd -S db -U sa -P {R} -Q 'select 1'",
            ),
            (
                "bcp dbo.t out t.dat -S db -U sa -P '{P}'",
                "bcp dbo.t out t.dat -S db -U sa -P '{R}'",
            ),
            (
                "zip -P {P} secret.zip notes.txt",
                "zip -P {R} secret.zip notes.txt",
            ),
            ("unzip -P {P} secret.zip", "unzip -P {R} secret.zip"),
            ("7z a -p{P} backup.7z data", "7z a -p{R} backup.7z data"),
        ],
        "command-line-password",
    ));
    let key = concat!("k3Yd8Fq2Lm9", "Xw4Zr7Tb1Nc6");
    assert_redacts(&[
        (
            format!("X-API-KEY={key}"),
            "X-API-KEY=[REDACTED: generic-secret]".to_owned(),
        ),
        (
            format!("api-key={key} region=eu"),
            "api-key=[REDACTED: generic-secret] region=eu".to_owned(),
        ),
        (
            format!("--client-key={key}"),
            "--client-key=[REDACTED: generic-secret]".to_owned(),
        ),
        (
            format!("db-pass = \"{PW}\""),
            "db-pass = \"[REDACTED: generic-password]\"".to_owned(),
        ),
    ]);
    assert_clean(
        &[
            "htpasswd -B -n bob",
            "htpasswd -n -B bob",
            "htpasswd -c -B .htpasswd bob",
            "htpasswd -B -C 10 .htpasswd bob",
            "sqlcmd -S db -U sa -P $SA_PASSWORD",
            "zip -r archive.zip src",
            "7z x -p backup.7z",
            "api-key=${API_KEY}",
            "X-API-KEY=<your key>",
        ]
        .map(str::to_owned),
    );
}

#[test]
fn a_token_with_a_distinctive_prefix_is_found_glued_to_letters_before_it() {
    let gh = format!("ghp_{GH_BODY}");
    let pat = format!("github_pat_11AB{}", "cD3eF5gH7jK9mN1pQ3rS5tU");
    let slack = concat!("xoxb-", "1234567890-", "AbCdEfGhIjKl");
    let npm = format!("npm_{GH_BODY}");
    // (GitHub's classic tokens: the Python tests, with the installed rules.)
    assert!(!kinds(&format!("test_add[user1{gh}]")).is_empty());
    assert!(!kinds(&format!("xghp_{GH_BODY}abc")).is_empty());
    assert_redacts(&[
        (
            format!("x{pat}"),
            "x[REDACTED: github-fine-grained-token]".to_owned(),
        ),
        (
            format!("key{slack}"),
            "key[REDACTED: slack-token]".to_owned(),
        ),
        (format!("a1{npm}"), "a1[REDACTED: npm-token]".to_owned()),
    ]);
    // A prefix that ends ordinary words stays bound to a word start.
    assert_clean(&[
        "mask_test_performancemeasurements".to_owned(),
        format!("cachekey-{}", "0123456789abcdef".repeat(2)),
    ]);
}
