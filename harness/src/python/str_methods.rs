//! Methods of `str` that reports and workloads use: `startswith`, `endswith`, `join`,
//! `split`, `strip`, `lower`, `upper`, `replace`, `format`, and `%` formatting.
//!
//! Strings are the model's interned text ([`Value::Str`]); CPython's strings are not GC
//! objects, so none of this moves the collector's counter.

use super::interp::{Interpreter, R};
use crate::heap::{ObjKind, Sym, Value};

impl<'a> Interpreter<'a> {
    /// `s.method(*args, **kwargs)`; `None` when the method is not modelled.
    pub(super) fn str_method(
        &mut self,
        s: Sym,
        method: &str,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> Option<R<Value>> {
        let text = self.names.name_rc(s);
        let str_arg = |it: &Self, i: usize| -> Option<std::rc::Rc<str>> {
            match args.get(i) {
                Some(Value::Str(a)) => Some(it.names.name_rc(*a)),
                _ => None,
            }
        };
        let out = match (method, args.len()) {
            ("startswith" | "endswith", 1) => {
                let prefixes: Vec<std::rc::Rc<str>> = match args[0] {
                    Value::Str(a) => vec![self.names.name_rc(a)],
                    Value::Obj(t) => {
                        match self.heap.kind(t) {
                            ObjKind::Tuple(items) => items
                                .iter()
                                .filter_map(|v| match v {
                                    Value::Str(a) => Some(self.names.name_rc(*a)),
                                    _ => None,
                                })
                                .collect(),
                            _ => {
                                return Some(self.error(
                                    "TypeError: startswith arg must be str or a tuple of str",
                                ));
                            }
                        }
                    }
                    _ => {
                        return Some(
                            self.error("TypeError: startswith arg must be str or a tuple of str"),
                        );
                    }
                };
                let hit = prefixes.iter().any(|p| {
                    if method == "startswith" {
                        text.starts_with(&**p)
                    } else {
                        text.ends_with(&**p)
                    }
                });
                Value::Bool(hit)
            }
            ("lower", 0) => self.new_str(&text.to_lowercase()),
            ("upper", 0) => self.new_str(&text.to_uppercase()),
            ("strip", 0) => self.new_str(text.trim()),
            ("lstrip", 0) => self.new_str(text.trim_start()),
            ("rstrip", 0) => self.new_str(text.trim_end()),
            ("replace", 2) => match (str_arg(self, 0), str_arg(self, 1)) {
                (Some(a), Some(b)) => self.new_str(&text.replace(&*a, &b)),
                _ => return Some(self.error("TypeError: replace() arguments must be str")),
            },
            ("join", 1) => {
                let items = match args[0] {
                    Value::Obj(o) => match self.heap.kind(o) {
                        ObjKind::List(items) | ObjKind::Tuple(items) => items.clone(),
                        _ => return Some(self.unsupported("str.join() of this iterable")),
                    },
                    _ => return Some(self.error("TypeError: can only join an iterable")),
                };
                let mut parts = Vec::with_capacity(items.len());
                for v in items {
                    match v {
                        Value::Str(p) => parts.push(self.names.name_rc(p)),
                        _ => {
                            return Some(
                                self.error("TypeError: sequence item: expected str instance"),
                            );
                        }
                    }
                }
                let joined = parts.iter().map(|p| &**p).collect::<Vec<_>>().join(&text);
                self.new_str(&joined)
            }
            ("split", 0 | 1) => {
                let pieces: Vec<String> = match str_arg(self, 0) {
                    Some(sep) if sep.is_empty() => {
                        return Some(self.error("ValueError: empty separator"));
                    }
                    Some(sep) => text.split(&*sep).map(str::to_string).collect(),
                    None => text.split_whitespace().map(str::to_string).collect(),
                };
                let items: Vec<Value> = pieces.iter().map(|p| self.new_str(p)).collect();
                Value::Obj(self.alloc(ObjKind::List(items)))
            }
            ("format", _) => match self.format_str(&text, args, kwargs) {
                Ok(s) => self.new_str(&s),
                Err(e) => return Some(Err(e)),
            },
            _ => return None,
        };
        Some(Ok(out))
    }

    pub(super) fn new_str(&mut self, s: &str) -> Value {
        Value::Str(self.names.intern(s))
    }

    /// `str.format`: `{}`, `{0}`, `{name}`, `{{`/`}}`; format specs are not modelled.
    fn format_str(&mut self, text: &str, args: &[Value], kwargs: &[(Sym, Value)]) -> R<String> {
        let mut out = String::new();
        let mut auto = 0usize;
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    out.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    out.push('}');
                }
                '{' => {
                    let mut field = String::new();
                    for d in chars.by_ref() {
                        if d == '}' {
                            break;
                        }
                        field.push(d);
                    }
                    let (name, spec) = field.split_once(':').unwrap_or((&field, ""));
                    if !spec.is_empty() {
                        return self.unsupported("format specs in str.format");
                    }
                    let v = if name.is_empty() {
                        auto += 1;
                        args.get(auto - 1).copied()
                    } else if let Ok(i) = name.parse::<usize>() {
                        args.get(i).copied()
                    } else {
                        kwargs
                            .iter()
                            .find(|(k, _)| self.names.name(*k) == name)
                            .map(|(_, v)| *v)
                    };
                    match v {
                        Some(v) => out.push_str(&self.display(v)),
                        None => {
                            return self.error(format!(
                                "IndexError: Replacement index {name} out of range"
                            ));
                        }
                    }
                }
                other => out.push(other),
            }
        }
        Ok(out)
    }

    /// `"fmt" % args`: `%s`, `%r`, `%d`, `%i`, `%f`, `%%` (no widths or precisions).
    pub(super) fn percent_format(&mut self, fmt: Sym, args: Value) -> R<Value> {
        let text = self.names.name_rc(fmt);
        let values: Vec<Value> = match args {
            Value::Obj(o) => match self.heap.kind(o) {
                ObjKind::Tuple(items) => items.clone(),
                _ => vec![args],
            },
            other => vec![other],
        };
        let mut out = String::new();
        let mut next = 0usize;
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            let Some(conv) = chars.next() else {
                return self.error("ValueError: incomplete format");
            };
            if conv == '%' {
                out.push('%');
                continue;
            }
            let Some(&v) = values.get(next) else {
                return self.error("TypeError: not enough arguments for format string");
            };
            next += 1;
            match (conv, v) {
                ('s' | 'r', v) => out.push_str(&self.display(v)),
                ('d' | 'i', Value::Int(i)) => out.push_str(&i.to_string()),
                ('d' | 'i', Value::Bool(b)) => out.push_str(if b { "1" } else { "0" }),
                ('d' | 'i', Value::Float(f)) => out.push_str(&(f.trunc() as i64).to_string()),
                ('f', Value::Int(i)) => out.push_str(&format!("{:.6}", i as f64)),
                ('f', Value::Float(f)) => out.push_str(&format!("{f:.6}")),
                ('d' | 'i' | 'f', _) => {
                    return self.error("TypeError: a number is required");
                }
                _ => return self.unsupported(format!("the `%{conv}` format")),
            }
        }
        if next < values.len() {
            return self.error("TypeError: not all arguments converted during string formatting");
        }
        Ok(self.new_str(&out))
    }
}
