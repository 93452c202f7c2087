//! `f(**a, **b)`, `f(x=1, **a)`: the keyword dict CPython builds at a call site with a `**`
//! argument (Python/compile.c `compiler_call_helper`), and the duplicate-keyword error of
//! its merge (`DICT_MERGE`, `BUILD_MAP_UNPACK_WITH_CALL` on 3.8).
//!
//! - 3.9+: the first keyword group (`BUILD_MAP n`), or `BUILD_MAP 0` when a `**` comes
//!   first, is the call's dict; each `**` and each later group (a temporary dict, freed at
//!   once) is merged into it; it lives until `CALL_FUNCTION_EX` returns.
//! - 3.8: each keyword group is a dict; a lone `**` dict is passed as it is; two or more
//!   containers are merged into a new dict that lives for the call, and the group dicts are
//!   freed.
//!
//! Approximations (said here and in the README): the dicts are counted after every
//! argument is evaluated (CPython makes the first before evaluating later `**` operands),
//! and the keyword-names tuple that `_PyStack_UnpackDict` makes for a Python callee is not
//! counted.

use super::interp::{Interpreter, R};
use crate::heap::{ObjKind, Sym, Value};
use ruff_python_ast as ast;

/// What a call site with `**` allocates: the dict that lives for the call, and the group
/// dicts made and freed before it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct KeywordDicts {
    pub call_dict: bool,
    pub temporaries: usize,
}

/// The dicts of a call whose keyword arguments are `splat[i]` (true for `**`).
fn keyword_dicts(splat: &[bool], minor: u8) -> KeywordDicts {
    if !splat.contains(&true) {
        return KeywordDicts::default();
    }
    // Groups of consecutive `name=value` keywords.
    let groups = splat
        .iter()
        .enumerate()
        .filter(|&(i, &s)| !s && (i == 0 || splat[i - 1]))
        .count();
    let splats = splat.iter().filter(|&&s| s).count();
    if minor >= 9 {
        // The call's dict is the first group's when the call starts with one.
        let first_is_group = !splat[0];
        return KeywordDicts {
            call_dict: true,
            temporaries: groups - usize::from(first_is_group),
        };
    }
    let containers = groups + splats;
    KeywordDicts {
        call_dict: containers > 1,
        temporaries: if containers > 1 { groups } else { 0 },
    }
}

impl<'a> Interpreter<'a> {
    /// Counts the dicts a call with `**` makes before the call (see the module note).
    /// Returns whether a dict lives for the call ([`Interpreter::keyword_dict_end`]).
    pub(super) fn keyword_dict_begin(&mut self, c: &ast::ExprCall) -> bool {
        let splat: Vec<bool> = c
            .arguments
            .keywords
            .iter()
            .map(|k| k.arg.is_none())
            .collect();
        let minor = self.heap.profile.version.minor;
        let dicts = keyword_dicts(&splat, minor);
        let dict = ObjKind::Dict(Vec::new());
        let count = |it: &mut Self| {
            if it.heap.count_allocation(&dict) {
                it.collection_due();
            }
        };
        if minor >= 9 {
            if dicts.call_dict {
                count(self);
            }
            for _ in 0..dicts.temporaries {
                count(self);
                self.heap.count_deallocation(&dict);
            }
        } else {
            for _ in 0..dicts.temporaries {
                count(self);
            }
            if dicts.call_dict {
                count(self);
            }
            for _ in 0..dicts.temporaries {
                self.heap.count_deallocation(&dict);
            }
        }
        dicts.call_dict
    }

    /// Frees the dict of [`Interpreter::keyword_dict_begin`] when the call returns.
    pub(super) fn keyword_dict_end(&mut self, call_dict: bool) {
        if call_dict {
            self.heap.count_deallocation(&ObjKind::Dict(Vec::new()));
        }
    }

    /// Adds the items of a `**` mapping to a call's keywords; a name already given is
    /// CPython's `TypeError` (3.9+ names the function with its module, as
    /// `_PyObject_FunctionStr` does).
    pub(super) fn merge_call_keywords(
        &mut self,
        c: &ast::ExprCall,
        kwargs: &mut Vec<(Sym, Value)>,
        items: Vec<(Sym, Value)>,
    ) -> R<()> {
        let duplicate = items
            .iter()
            .find(|(k, _)| kwargs.iter().any(|(seen, _)| seen == k))
            .map(|(k, _)| self.names.name(*k).to_string());
        if let Some(name) = duplicate {
            self.heap.decref_all(items.into_iter().map(|(_, v)| v));
            let callee = self.callee_text(&c.func);
            return self.error(format!(
                "TypeError: {callee}() got multiple values for keyword argument '{name}'"
            ));
        }
        kwargs.extend(items);
        Ok(())
    }

    /// How CPython names a called function in an argument error: `f` on 3.8, `__main__.f`
    /// from 3.9 for a workload's own function (approximated by the call's source text).
    fn callee_text(&self, func: &ast::Expr) -> String {
        let text = match func {
            ast::Expr::Name(n) => n.id.to_string(),
            ast::Expr::Attribute(a) => a.attr.to_string(),
            _ => "function".to_string(),
        };
        if self.heap.profile.version.minor >= 9 && matches!(func, ast::Expr::Name(_)) {
            format!("__main__.{text}")
        } else {
            text
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{KeywordDicts, keyword_dicts};

    #[test]
    fn dicts_follow_compiler_call_helper() {
        let d = |call_dict, temporaries| KeywordDicts {
            call_dict,
            temporaries,
        };
        // f(**a)
        assert_eq!(keyword_dicts(&[true], 9), d(true, 0));
        assert_eq!(keyword_dicts(&[true], 8), d(false, 0));
        // f(**a, **b)
        assert_eq!(keyword_dicts(&[true, true], 11), d(true, 0));
        assert_eq!(keyword_dicts(&[true, true], 8), d(true, 0));
        // f(x=1, **a, y=2)
        assert_eq!(keyword_dicts(&[false, true, false], 12), d(true, 1));
        assert_eq!(keyword_dicts(&[false, true, false], 8), d(true, 2));
        // f(x=1): no `**`, no dict
        assert_eq!(keyword_dicts(&[false], 12), d(false, 0));
    }
}
