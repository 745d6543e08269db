//! MCP OAuth end to end: `stud mcp login` against a real authorization
//! server (the MCP TypeScript SDK's router and demo provider, with refresh
//! tokens added), a tool call with the token, a token refreshed before it
//! expires, `stud mcp logout`, and a headless run without a login refused
//! with the hint instead of waiting. The test is the browser: it opens
//! the printed address and follows the redirect to stud's loopback port.

use crate::common;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use common::StudEnv;
use common::npm::OAuthServer;
use serde_json::{Value, json};

/// One GET on loopback without following redirects: status, `Location`.
fn get(url: &str) -> (u16, Option<String>) {
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut stream = TcpStream::connect(host).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "GET {} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n",
        if path.is_empty() { "/" } else { path }
    )
    .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).unwrap();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let location = text.lines().take_while(|l| !l.is_empty()).find_map(|l| {
        l.split_once(':')
            .filter(|(k, _)| k.eq_ignore_ascii_case("location"))
            .map(|(_, v)| v.trim().to_string())
    });
    (status, location)
}

/// `stud mcp login NAME --no-browser`, with the test as the browser: it
/// opens the printed address and follows the redirect back to stud.
/// Before that, a request with a forged `state` is turned away.
fn login(env: &StudEnv, name: &str) -> Output {
    let mut child = env
        .command(&["mcp", "login", name, "--no-browser"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run stud mcp login");
    let mut stderr = BufReader::new(child.stderr.take().expect("piped"));
    let mut said = String::new();
    let address = loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap_or(0) == 0 {
            let out = child.wait_with_output().expect("wait");
            panic!(
                "stud mcp login printed no address:\n{said}\n{}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
        said.push_str(&line);
        if let Some(url) = line.trim().strip_prefix("http://") {
            break format!("http://{url}");
        }
    };
    let (status, back) = get(&address);
    assert_eq!(status, 302, "the authorization server did not redirect");
    let back = back.expect("a Location");
    assert!(back.starts_with("http://127.0.0.1:"), "{back}");
    // Someone else on the machine tries a code of their own first.
    let forged = format!(
        "{}?code=stolen&state=forged",
        back.split('?').next().unwrap()
    );
    assert_eq!(get(&forged).0, 404);
    assert_eq!(get(&back).0, 200);
    let mut out = child.wait_with_output().expect("wait");
    stderr.read_to_end(&mut out.stderr).ok();
    out
}

fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A headless run whose model calls the server's tool, then repeats the
/// result.
fn run(env: &StudEnv) -> Output {
    env.command(&["run", "-p", "who am I?"])
        .output()
        .expect("run stud")
}

fn script(env: &StudEnv, url: &str) {
    env.script(
        json!([
            {"text": "", "tool_calls": [common::call("mcp__secure__whoami", json!({}))]},
            {"text": "the server said: {{tool_results}}"},
            {"text": "", "tool_calls": [common::call("mcp__secure__whoami", json!({}))]},
            {"text": "the server said: {{tool_results}}"},
            {"text": "", "tool_calls": [common::call("mcp__secure__whoami", json!({}))]},
            {"text": "the server said: {{tool_results}}"}
        ]),
        json!({
            "securityMode": {"mode": "allowlist", "allowlist": ["mcp__secure__whoami"]},
            "mcpServers": {"secure": {"type": "http", "url": url, "startTimeoutMs": 20000}}
        }),
    );
    env.ok(&["mcp", "trust", "secure"]);
}

#[test]
fn login_call_refresh_and_logout_against_a_real_authorization_server() {
    // Tokens last 10 s: stud renews one once less than half its life
    // (5 s) is left, so at 6.5 s it must have renewed it although the
    // server would still take the old one.
    let mut server = OAuthServer::start(10);
    let env = StudEnv::new();
    script(&env, &server.url);

    // No login yet: the headless run says what to do and does not wait.
    let started = Instant::now();
    let out = run(&env);
    let said = text(&out);
    assert!(
        said.contains("MCP server `secure` needs a login: run `stud mcp login secure`"),
        "{said}"
    );
    assert!(started.elapsed() < Duration::from_secs(20), "{said}");

    let out = login(&env, "secure");
    let logged_in = Instant::now();
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("logged in to MCP server `secure`") && said.contains("renewed"),
        "{said}"
    );
    // Registration as a public client, PKCE, and the resource indicator
    // naming this server.
    let events = server.events().to_vec();
    let registered = events
        .iter()
        .find(|e| e["event"] == "registered")
        .expect("registered");
    assert_eq!(registered["auth"], "none", "{events:?}");
    let authorize = events
        .iter()
        .find(|e| e["event"] == "authorize")
        .expect("authorize");
    assert_eq!(authorize["pkce"], true);
    assert_eq!(authorize["resource"], server.url.as_str());
    assert_eq!(server.count("token"), 1);

    // The tokens are private to the person and never in settings.
    let kept: Vec<_> = std::fs::read_dir(env.home.path().join("mcp-auth"))
        .expect("the login folder")
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .collect();
    assert_eq!(kept.len(), 1);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(kept[0].path())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let stored: Value = serde_json::from_slice(&std::fs::read(kept[0].path()).unwrap()).unwrap();
    let token = stored["credentials"]["token_response"]["access_token"]
        .as_str()
        .expect("an access token")
        .to_string();
    let settings = std::fs::read_to_string(env.home.path().join("settings.json")).unwrap();
    assert!(!settings.contains(&token));

    let listed: Value = serde_json::from_str(&env.ok(&["mcp", "list", "--json"])).unwrap();
    assert_eq!(listed["servers"][0]["login"], "kept", "{listed}");

    // A call with the token.
    let out = run(&env);
    let said = text(&out);
    assert!(
        out.status.success() && said.contains("the server said: signed in as"),
        "{said}"
    );
    assert_eq!(server.count("call"), 1);
    assert_eq!(server.count("refreshed"), 0, "{:?}", server.events());

    // Past half its life the token is renewed before it is sent (whole
    // seconds: rmcp counts the token's age so).
    std::thread::sleep(Duration::from_millis(6500).saturating_sub(logged_in.elapsed()));
    let out = run(&env);
    let said = text(&out);
    assert!(
        out.status.success() && said.contains("the server said: signed in as"),
        "{said}"
    );
    assert!(server.count("refreshed") >= 1, "{:?}", server.events());
    let stored: Value = serde_json::from_slice(&std::fs::read(kept[0].path()).unwrap()).unwrap();
    assert_ne!(
        stored["credentials"]["token_response"]["access_token"].as_str(),
        Some(token.as_str()),
        "the refreshed token was kept"
    );

    let out = env.ok(&["mcp", "logout", "secure"]);
    assert!(out.contains("logged out of MCP server `secure`"), "{out}");
    assert!(!kept[0].path().exists());
    let said = text(&run(&env));
    assert!(said.contains("needs a login"), "{said}");
}

/// A login to a server that is not an HTTP server, or not configured, is
/// refused naming it.
#[test]
fn login_names_what_is_wrong() {
    let env = StudEnv::new();
    env.scripted_settings(json!({"mcpServers": {"local": {"command": "true"}}}));
    env.ok(&["mcp", "trust", "local"]);
    let out = env
        .command(&["mcp", "login", "local"])
        .output()
        .expect("run stud");
    assert!(!out.status.success());
    assert!(
        text(&out).contains("`local` is a stdio server"),
        "{}",
        text(&out)
    );
    let out = env
        .command(&["mcp", "login", "nowhere"])
        .output()
        .expect("run stud");
    assert!(!out.status.success());
    assert!(text(&out).contains("nowhere"), "{}", text(&out));
}
