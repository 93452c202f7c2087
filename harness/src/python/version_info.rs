//! `sys.version_info`: the running release as a struct sequence (a tuple subclass with named
//! fields), so that version checks (`if sys.version_info >= (3, 11):`) take the branch of the
//! scenario's `python:` version. CPython makes it once at start-up with
//! `PyStructSequence_New` (untracked, measured `gc.is_tracked(...)` false on 3.8 – 3.13) and
//! every read returns that object: reading it, indexing it and comparing it with a constant
//! tuple create nothing (measured 0 objects on 3.8 – 3.13).

use super::interp::Interpreter;
use crate::heap::{ObjKind, StructSeqType, Value};

pub(super) static VERSION_INFO: StructSeqType = StructSeqType {
    name: "sys.version_info",
    fields: &["major", "minor", "micro", "releaselevel", "serial"],
};

/// Key of `sys.version_info` among the interpreter's kept constants (the others are keyed
/// by AST node addresses, never 1, and the empty tuple by 0).
const VERSION_INFO_KEY: usize = 1;

impl Interpreter<'_> {
    /// `sys.version_info`, borrowed (the constants own the one object; module attribute
    /// reads take their own reference). The micro release is the scenario's patch
    /// (`python: "3.11.7"`), 0 when it names only the minor release.
    pub(super) fn sys_version_info(&mut self) -> Value {
        if let Some(&id) = self.constants.get(&VERSION_INFO_KEY) {
            return Value::Obj(id);
        }
        let version = self.heap.profile.version;
        let items = vec![
            Value::Int(3),
            Value::Int(version.minor.into()),
            Value::Int(version.patch.unwrap_or(0).into()),
            Value::Str(self.names.intern("final")),
            Value::Int(0),
        ];
        let id = self.heap.insert_uncounted(ObjKind::StructSeq {
            ty: &VERSION_INFO,
            items,
        });
        self.constants.insert(VERSION_INFO_KEY, id);
        Value::Obj(id)
    }
}
