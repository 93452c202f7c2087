//! Typed errors. Every error that comes from an input file carries a [`Location`]
//! (file, line, column) so the user can jump straight to the cause.

use std::fmt;
use std::path::PathBuf;

/// A position in an input file. Lines and columns count from 1, columns in characters; a
/// binary file (a snapshot pickle) has no lines: its positions are byte offsets.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct Location {
    /// The file as the user named it (or relative to the workspace): never made absolute,
    /// so that messages and golden files do not depend on this machine.
    pub file: String,
    /// 0 in a binary file.
    pub line: u32,
    /// 0 in a binary file.
    pub column: u32,
    /// Where in a binary file, when the problem is at one place of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub byte_offset: Option<u64>,
}

impl Location {
    pub fn new(file: impl Into<String>, line: u32, column: u32) -> Self {
        Location {
            file: file.into(),
            line,
            column,
            byte_offset: None,
        }
    }

    /// A place in a binary file: a byte offset, or the file as a whole (`None`), for a
    /// problem of its decoded structure rather than of one byte.
    pub fn in_binary(file: impl Into<String>, byte_offset: Option<u64>) -> Self {
        Location {
            file: file.into(),
            line: 0,
            column: 0,
            byte_offset,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.byte_offset) {
            (0, Some(offset)) => write!(f, "{}: byte offset {offset}", self.file),
            (0, None) => write!(f, "{}", self.file),
            _ => write!(f, "{}:{}:{}", self.file, self.line, self.column),
        }
    }
}

/// What kind of input problem an [`Error::Input`] is; shown in the message and used by tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputErrorKind {
    /// The YAML itself does not parse.
    Yaml,
    /// The YAML parses but does not match the scenario schema (unknown key, wrong type, ...).
    Schema,
    /// The workload is not valid Python.
    PythonSyntax,
    /// Valid Python that the workload interpreter does not model.
    Unsupported,
    /// The workload raised an error while running (undefined name, wrong argument, ...).
    Runtime,
    /// A snapshot or other data file is malformed.
    Data,
    /// The workload ran past its budget (`limits:` steps, memory or seconds).
    Budget,
}

impl fmt::Display for InputErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            InputErrorKind::Yaml => "YAML error",
            InputErrorKind::Schema => "scenario error",
            InputErrorKind::PythonSyntax => "Python syntax error",
            InputErrorKind::Unsupported => "unsupported",
            InputErrorKind::Runtime => "workload error",
            InputErrorKind::Data => "data error",
            InputErrorKind::Budget => "budget",
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A problem in an input file, at a known place.
    #[error("{location}: {kind}: {message}")]
    Input {
        kind: InputErrorKind,
        location: Location,
        message: String,
    },
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Bad command-line usage or configuration.
    #[error("{0}")]
    Usage(String),
    /// Several input problems found at once (the static pre-run pass reports every
    /// unsupported construct of a workload), one per line.
    #[error("{}", several_lines(.0))]
    Several(Vec<Error>),
}

fn several_lines(errors: &[Error]) -> String {
    let mut text = format!("{} problems, all found before running:", errors.len());
    for e in errors {
        text.push_str("\n  ");
        text.push_str(&e.to_string());
    }
    text
}

impl Error {
    pub fn input(kind: InputErrorKind, location: Location, message: impl Into<String>) -> Self {
        Error::Input {
            kind,
            location,
            message: message.into(),
        }
    }

    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// The location of an input error, if this is one.
    pub fn location(&self) -> Option<&Location> {
        match self {
            Error::Input { location, .. } => Some(location),
            Error::Several(errors) => errors.first().and_then(Error::location),
            _ => None,
        }
    }

    /// The exit code a command should end with when this error stops it.
    pub fn exit_code(&self) -> i32 {
        crate::exit_code::BAD_INPUT
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
