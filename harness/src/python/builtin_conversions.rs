//! The conversion builtins users' logging code calls (`format`, `hex`, `bin`, `oct`, `chr`,
//! `ord`, `pow`), and the names of every CPython builtin, so that one the model lacks is
//! reported as unsupported instead of as the workload's `NameError`.

use super::interp::{Interpreter, R};
use super::natives::Native;
use crate::heap::Value;
use ruff_python_ast::Operator;

/// The names of CPython 3.13's `builtins` module that are functions or types a workload
/// may call (exceptions excluded: those the model lacks are reported where they are used).
const PYTHON_BUILTINS: &[&str] = &[
    "abs",
    "aiter",
    "all",
    "anext",
    "any",
    "ascii",
    "bin",
    "bool",
    "breakpoint",
    "bytearray",
    "bytes",
    "callable",
    "chr",
    "classmethod",
    "compile",
    "complex",
    "delattr",
    "dict",
    "dir",
    "divmod",
    "enumerate",
    "eval",
    "exec",
    "filter",
    "float",
    "format",
    "frozenset",
    "getattr",
    "globals",
    "hasattr",
    "hash",
    "help",
    "hex",
    "id",
    "input",
    "int",
    "isinstance",
    "issubclass",
    "iter",
    "len",
    "list",
    "locals",
    "map",
    "max",
    "memoryview",
    "min",
    "next",
    "object",
    "oct",
    "open",
    "ord",
    "pow",
    "print",
    "property",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "setattr",
    "slice",
    "sorted",
    "staticmethod",
    "str",
    "sum",
    "super",
    "tuple",
    "type",
    "vars",
    "zip",
    "__import__",
];

/// Whether `name` is a builtin of CPython (modelled or not).
pub(super) fn is_python_builtin(name: &str) -> bool {
    PYTHON_BUILTINS.contains(&name)
}

impl Interpreter<'_> {
    /// Calls one of this file's builtins (arguments borrowed).
    pub(super) fn call_conversion_builtin(&mut self, n: Native, p: &[Value]) -> R<Value> {
        match (n, p) {
            (Native::FormatFn, [v]) => self.format_builtin(*v, ""),
            (Native::FormatFn, [v, Value::Str(spec)]) => {
                let spec = self.names.name_rc(*spec);
                self.format_builtin(*v, &spec)
            }
            (Native::FormatFn, [_, _]) => self.error("TypeError: format() argument 2 must be str"),
            (Native::HexFn | Native::BinFn | Native::OctFn, [v]) => {
                let spec = match n {
                    Native::HexFn => "#x",
                    Native::BinFn => "#b",
                    _ => "#o",
                };
                match v {
                    Value::Int(_) | Value::Bool(_) => self.format_builtin(*v, spec),
                    other => {
                        let name = self.value_type_name(*other);
                        self.error(format!(
                            "TypeError: '{name}' object cannot be interpreted as an integer"
                        ))
                    }
                }
            }
            (Native::ChrFn, [Value::Int(i)]) => {
                match u32::try_from(*i).ok().and_then(char::from_u32) {
                    Some(c) => Ok(self.new_str(&c.to_string())),
                    None => self.error("ValueError: chr() arg not in range(0x110000)"),
                }
            }
            (Native::OrdFn, [Value::Str(s)]) => {
                let text = self.names.name(*s);
                let mut chars = text.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => Ok(Value::Int(i64::from(u32::from(c)))),
                    _ => {
                        let len = text.chars().count();
                        self.error(format!(
                            "TypeError: ord() expected a character, but string of length {len} found"
                        ))
                    }
                }
            }
            // `pow(a, b)` is `a ** b`.
            (Native::PowFn, [a, b]) => self.binary(Operator::Pow, *a, *b, false),
            (Native::PowFn, [_, _, _]) => self.unsupported("pow() with a modulus"),
            _ => {
                let name = match n {
                    Native::FormatFn => "format",
                    Native::HexFn => "hex",
                    Native::BinFn => "bin",
                    Native::OctFn => "oct",
                    Native::ChrFn => "chr",
                    Native::OrdFn => "ord",
                    _ => "pow",
                };
                self.error(format!("TypeError: {name}() got unexpected arguments"))
            }
        }
    }

    /// `format(v, spec)`: `type(v).__format__(v, spec)`.
    fn format_builtin(&mut self, v: Value, spec: &str) -> R<Value> {
        let text = self.format_field(v, None, spec)?;
        Ok(self.new_str(&text))
    }
}
