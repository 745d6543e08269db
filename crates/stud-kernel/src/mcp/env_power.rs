//! Environment variables with power over what a stdio server runs. A
//! server entry's `env` is applied to the process stud starts, and some
//! variables do far more than configure it: `LD_PRELOAD` loads a library
//! into it, `NODE_OPTIONS=--require x.js` runs a script first, a `GIT_*`
//! pair can set `core.fsmonitor` for every git it calls. A trust question
//! names each such variable and what it does, so a person trusting a
//! repository's server sees what would run, not just the command line.
//!
//! Names are compared in upper case (npm, proxies and others read the
//! lower-case spelling too); a trailing `*` in the table is a prefix.

/// What a variable can change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Power {
    /// Which code runs: loaders, interpreters' start-up hooks, search
    /// paths, programs run by name, config that names programs, package
    /// indexes a runner downloads from.
    Code,
    /// Which TLS certificates are trusted (a man in the middle).
    Trust,
    /// Where network traffic goes (a proxy sees it all).
    Traffic,
}

impl Power {
    /// What a prompt says of a variable with this power.
    pub fn says(self) -> &'static str {
        match self {
            Power::Code => "changes which code the server runs",
            Power::Trust => "changes which TLS certificates the server trusts",
            Power::Traffic => "sends the server's network traffic through another host",
        }
    }
}

const CODE: &[&str] = &[
    // The dynamic loader (glibc, musl, macOS) and glibc's module paths.
    "LD_*",
    "DYLD_*",
    "GCONV_PATH",
    "GLIBC_TUNABLES",
    // Which program a name runs, and shells' start-up files and hooks.
    "PATH",
    "BASH_ENV",
    "ENV",
    "BASH_FUNC_*",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "SHELL",
    "HOME",
    "ZDOTDIR",
    "XDG_CONFIG_HOME",
    "XDG_CONFIG_DIRS",
    "XDG_DATA_HOME",
    "XDG_DATA_DIRS",
    // Programs other programs run by name.
    "EDITOR",
    "VISUAL",
    "PAGER",
    "BROWSER",
    "SSH_ASKPASS",
    "SUDO_ASKPASS",
    // Node, npm and the other JavaScript runners.
    "NODE_OPTIONS",
    "NODE_PATH",
    "NODE_REPL_EXTERNAL_MODULE",
    "ELECTRON_RUN_AS_NODE",
    "NPM_CONFIG_*",
    "YARN_*",
    "PNPM_*",
    "BUN_*",
    "DENO_*",
    // Python and its package runners (uvx, pipx download what they run).
    "PYTHON*",
    "PIP_*",
    "PIPX_*",
    "UV_*",
    // Perl, Ruby, Lua, PHP, Tcl, R.
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "PERL5DB",
    "RUBYOPT",
    "RUBYLIB",
    "GEM_HOME",
    "GEM_PATH",
    "BUNDLE_GEMFILE",
    "LUA_*",
    "PHPRC",
    "PHP_INI_SCAN_DIR",
    "TCLLIBPATH",
    "R_PROFILE",
    "R_PROFILE_USER",
    "R_ENVIRON",
    "R_ENVIRON_USER",
    "R_LIBS",
    "R_LIBS_USER",
    // The JVM and .NET.
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "CLASSPATH",
    "JAVA_HOME",
    "DOTNET_*",
    "CORECLR_*",
    "COR_*",
    // Go and Rust toolchains (`go run`, `cargo run` servers).
    "GOFLAGS",
    "GOPROXY",
    "GOSUMDB",
    "GONOSUMDB",
    "GONOSUMCHECK",
    "GOTOOLCHAIN",
    "GOPATH",
    "CARGO_*",
    "RUSTC",
    "RUSTC_WRAPPER",
    "RUSTFLAGS",
    // git reads config from these (`core.fsmonitor`, `core.sshCommand`).
    "GIT_*",
    // OpenSSL can load engines and providers from its config.
    "OPENSSL_CONF",
    "OPENSSL_ENGINES",
    "OPENSSL_MODULES",
];

const TRUST: &[&str] = &[
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "NODE_TLS_REJECT_UNAUTHORIZED",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
];

const TRAFFIC: &[&str] = &[
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "FTP_PROXY",
];

/// The power `name` has over the server, if any.
pub fn power(name: &str) -> Option<Power> {
    let upper = name.to_ascii_uppercase();
    let listed = |table: &[&str]| {
        table.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => upper.starts_with(prefix),
            None => upper == *p,
        })
    };
    // Trust and traffic first: a few of them would match a code prefix
    // (`NODE_EXTRA_CA_CERTS` is no `NODE_OPTIONS`), and they say more.
    if listed(TRUST) {
        Some(Power::Trust)
    } else if listed(TRAFFIC) {
        Some(Power::Traffic)
    } else if listed(CODE) {
        Some(Power::Code)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_named_variables_have_their_power_and_others_none() {
        for name in [
            "LD_PRELOAD",
            "LD_LIBRARY_PATH",
            "DYLD_INSERT_LIBRARIES",
            "NODE_OPTIONS",
            "PATH",
            "PYTHONPATH",
            "PYTHONSTARTUP",
            "BASH_ENV",
            "ENV",
            "PERL5OPT",
            "RUBYOPT",
            "JAVA_TOOL_OPTIONS",
            "GIT_CONFIG_VALUE_0",
            "GIT_SSH_COMMAND",
            "npm_config_node_options",
            "BASH_FUNC_ls%%",
        ] {
            assert_eq!(power(name), Some(Power::Code), "{name}");
        }
        assert_eq!(power("NODE_EXTRA_CA_CERTS"), Some(Power::Trust));
        assert_eq!(power("https_proxy"), Some(Power::Traffic));
        for name in ["DEBUG", "LOG_LEVEL", "GITHUB_TOKEN", "NODE_ENV", "PAT"] {
            assert_eq!(power(name), None, "{name}");
        }
    }
}
