//! `--debug`, `--debug-file` and `RUST_LOG` with the `stud` binary: the
//! start-up phases, the turn, its stages, hooks and extension calls come
//! out as `tracing` spans with their durations, on stderr or in the stud
//! home's debug log, never on stdout; without them nothing is printed.

use crate::common;

use common::StudEnv;

fn env() -> StudEnv {
    common::reads_then_answers()
}

fn run(env: &StudEnv, args: &[&str], vars: &[(&str, &str)]) -> (bool, String, String) {
    let out = env
        .command(args)
        .envs(vars.iter().copied())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn debug_prints_spans_with_durations_on_stderr_and_leaves_stdout_alone() {
    let env = env();
    let (ok, plain_out, plain_err) = run(&env, &["-p", "go"], &[]);
    assert!(ok, "{plain_err}");
    assert!(
        !plain_err.contains("time.busy"),
        "off by default: {plain_err}"
    );

    let env = self::env();
    let (ok, out, err) = run(&env, &["--debug", "-p", "go"], &[]);
    assert!(ok, "{err}");
    assert_eq!(out, plain_out, "stdout is the answer only");
    for span in [
        "start: ",
        "start:settings: ",
        "start:discovery: ",
        "start:load_extensions{count=",
        "load{ext=read}: ",
        "instantiate{ext=",
        "init{ext=",
        "turn{session=",
        "stage{name=receive-input}",
        "stage{name=compose-request}",
        "stage{name=tool-call}",
        "hook{ext=protect-paths slot=tool-call.pre kind=\"guard\"}",
        "call{ext=read func=\"invoke\"}",
    ] {
        assert!(err.contains(span), "no `{span}` in:\n{err}");
    }
    let closes = err
        .lines()
        .filter(|l| l.contains("close time.busy="))
        .count();
    assert!(closes > 20, "each span says how long it took:\n{err}");

    // A filter narrows it: only the turn's spans at info.
    let (ok, _, err) = run(&self::env(), &["--debug=stud=info", "-p", "go"], &[]);
    assert!(
        ok && err.contains("turn{session=") && !err.contains("load{ext="),
        "{err}"
    );

    // RUST_LOG does the same without the flag.
    let (ok, _, err) = run(&self::env(), &["-p", "go"], &[("RUST_LOG", "stud=debug")]);
    assert!(ok && err.contains("load{ext=read}"), "{err}");
}

#[test]
fn debug_file_writes_to_the_home_and_a_bad_filter_is_named() {
    let env = env();
    let (ok, _, err) = run(&env, &["--debug-file", "-p", "go"], &[]);
    assert!(ok, "{err}");
    assert!(!err.contains("time.busy"), "{err}");
    let log = std::fs::read_to_string(env.home.path().join("logs/debug.log")).unwrap();
    assert!(
        log.contains("load{ext=read}") && log.contains("turn{"),
        "{log}"
    );

    // In front of a subcommand as well as after it.
    let (ok, out, err) = run(&env, &["--debug", "ext", "list"], &[]);
    assert!(ok && out.contains("read"), "{err}");
    let (ok, _, err) = run(&env, &["ext", "check", "read", "--debug"], &[]);
    assert!(ok && err.contains("instantiate{ext=read"), "{err}");

    let (ok, out, err) = run(&env, &["--debug=stud=loud", "-p", "go"], &[]);
    assert!(!ok && out.is_empty(), "{out}");
    assert!(
        err.contains("--debug=stud=loud") && err.contains("stud=debug"),
        "{err}"
    );
}
