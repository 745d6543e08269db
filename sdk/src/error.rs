//! The error every extension function returns.

use crate::wit::stud::extension::types::{ErrorClass, ExtError};

/// A typed error: the class decides how the kernel recovers (retry, show the
/// model, disable the extension); `code` is stable and machine-readable;
/// `message` is for people and should say what to do.
#[derive(Debug, Clone)]
pub struct Error(pub ExtError);

impl Error {
    /// Any class and code, for cases the shorthands below do not cover.
    pub fn new(class: ErrorClass, code: &str, message: impl Into<String>) -> Self {
        Error(ExtError {
            class,
            code: code.to_string(),
            message: message.into(),
            context: None,
        })
    }

    /// Attach structured detail (a JSON object).
    pub fn with_context(mut self, context: serde_json::Value) -> Self {
        self.0.context = Some(context.to_string());
        self
    }

    /// The arguments or input were wrong; the model should fix its call.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(ErrorClass::ToolTerminal, "input-invalid", message)
    }

    /// An I/O error about `path`, naming the path (WASI errors do not).
    /// A path that passed [`crate::fs::project_path`] and is still not
    /// permitted leads outside the project through a symbolic link (the
    /// sandbox refuses it) or needs access the tool was not granted.
    pub fn io(path: &str, e: std::io::Error) -> Self {
        let denied = e.kind() == std::io::ErrorKind::PermissionDenied;
        let mut err = Error::from(e);
        err.0.message = if denied {
            format!(
                "`{path}`: not permitted: it leads outside the project directory (through a symbolic link), or this tool was not granted that access ({})",
                err.0.message
            )
        } else {
            format!("`{path}`: {}", err.0.message)
        };
        err
    }

    /// A named thing (file, session, model) does not exist.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorClass::ToolTerminal, "not-found", message)
    }

    /// A tool failed for good.
    pub fn tool(code: &str, message: impl Into<String>) -> Self {
        Self::new(ErrorClass::ToolTerminal, code, message)
    }

    /// Bad configuration or declaration.
    pub fn validation(code: &str, message: impl Into<String>) -> Self {
        Self::new(ErrorClass::Validation, code, message)
    }

    /// A provider failure worth retrying.
    pub fn transient(code: &str, message: impl Into<String>) -> Self {
        Self::new(ErrorClass::ProviderTransient, code, message)
    }

    /// An internal failure of the extension itself.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorClass::ExtensionHost, "internal", message)
    }

    /// How the kernel will recover from this error.
    pub fn class(&self) -> ErrorClass {
        self.0.class
    }

    /// The stable code, for matching in code and tests.
    pub fn code(&self) -> &str {
        &self.0.code
    }

    /// The human-readable explanation.
    pub fn message(&self) -> &str {
        &self.0.message
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.0.code, self.0.message)
    }
}

impl std::error::Error for Error {}

impl From<ExtError> for Error {
    fn from(e: ExtError) -> Self {
        Error(e)
    }
}

impl From<Error> for ExtError {
    fn from(e: Error) -> Self {
        e.0
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::invalid_input(format!("invalid JSON: {e}"))
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        let code = match e.kind() {
            std::io::ErrorKind::NotFound => "not-found",
            std::io::ErrorKind::PermissionDenied => "forbidden",
            _ => "io",
        };
        Error::tool(code, e.to_string())
    }
}
