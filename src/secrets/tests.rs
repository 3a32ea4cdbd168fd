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
