//! Methods of `str` that reports and workloads use: `startswith`, `endswith`, `join`,
//! `split`, `strip`, `lower`, `upper`, `replace`, `format`, and `%` formatting.
//!
//! Strings are the model's interned text ([`Value::Str`]); CPython's strings are not GC
//! objects, so none of this moves the collector's counter.

use super::format_spec::{self, FormatError, Spec};
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
                // Lists and tuples are read in place; any other iterable (`map`, `zip`,
                // a generator, a string) is drained first, as `PySequence_Fast` does.
                let (items, owned) = match args[0] {
                    Value::Obj(o) => match self.heap.kind(o) {
                        ObjKind::List(items) | ObjKind::Tuple(items) => (items.clone(), false),
                        _ => match self.collect_items(args[0]) {
                            Ok(items) => (items, true),
                            Err(e) => return Some(Err(e)),
                        },
                    },
                    Value::Str(s) => {
                        let chars: Vec<char> = self.names.name(s).chars().collect();
                        let items = chars.iter().map(|c| self.new_str(&c.to_string())).collect();
                        (items, false)
                    }
                    other => {
                        let name = self.value_type_name(other);
                        return Some(self.error(format!(
                            "TypeError: can only join an iterable, not '{name}'"
                        )));
                    }
                };
                let mut parts = Vec::with_capacity(items.len());
                let mut bad = None;
                for (at, v) in items.iter().enumerate() {
                    match v {
                        Value::Str(p) => parts.push(self.names.name_rc(*p)),
                        other => {
                            bad = Some((at, self.value_type_name(*other)));
                            break;
                        }
                    }
                }
                if owned {
                    self.heap.decref_all(items);
                }
                if let Some((at, name)) = bad {
                    return Some(self.error(format!(
                        "TypeError: sequence item {at}: expected str instance, {name} found"
                    )));
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
            _ => return self.str_text_method(&text, method, args),
        };
        Some(Ok(out))
    }

    pub(super) fn new_str(&mut self, s: &str) -> Value {
        Value::Str(self.names.intern(s))
    }

    /// `str.format`: `{}`, `{0}`, `{name}`, `{{`/`}}`, attribute and index fields
    /// (`{0.x}`, `{d[k]}`, `{0[1].y}`), conversions (`!r`, `!s`, `!a`) and format specs.
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
                    let mut closed = false;
                    for d in chars.by_ref() {
                        if d == '}' {
                            closed = true;
                            break;
                        }
                        if d == '{' {
                            return self.unsupported("a nested `{}` field in a format spec");
                        }
                        field.push(d);
                    }
                    if !closed {
                        return self.error("ValueError: expected '}' before end of string");
                    }
                    let (head, spec) = field.split_once(':').unwrap_or((&field, ""));
                    let (name, conversion) = match head.split_once('!') {
                        Some((n, c)) => (n, c.chars().next()),
                        None => (head, None),
                    };
                    let (name, accessors) = match name.find(['.', '[']) {
                        Some(at) => name.split_at(at),
                        None => (name, ""),
                    };
                    let v = if name.is_empty() {
                        auto += 1;
                        args.get(auto - 1).copied()
                    } else if let Ok(i) = name.parse::<usize>() {
                        args.get(i).copied()
                    } else {
                        match kwargs.iter().find(|(k, _)| self.names.name(*k) == name) {
                            Some((_, v)) => Some(*v),
                            None => return self.error(format!("KeyError: '{name}'")),
                        }
                    };
                    let Some(v) = v else {
                        return self
                            .error(format!("IndexError: Replacement index {name} out of range"));
                    };
                    if accessors.is_empty() {
                        let piece = self.format_field(v, conversion, spec)?;
                        out.push_str(&piece);
                    } else {
                        let v = self.format_field_access(v, accessors)?;
                        let piece = self.format_field(v, conversion, spec);
                        self.heap.decref(v);
                        out.push_str(&piece?);
                    }
                }
                '}' => return self.error("ValueError: Single '}' encountered in format string"),
                other => out.push(other),
            }
        }
        Ok(out)
    }

    /// `v.attr[key]...` of a replacement field (`accessors` starts at the first `.` or `[`),
    /// as `string.Formatter.get_field` resolves it: a key of digits is an int, any other key
    /// a string. A new reference.
    fn format_field_access(&mut self, v: Value, accessors: &str) -> R<Value> {
        self.heap.incref(v);
        let mut current = v;
        let mut rest = accessors;
        while !rest.is_empty() {
            let step = if let Some(after) = rest.strip_prefix('.') {
                let end = after.find(['.', '[']).unwrap_or(after.len());
                let (attr, tail) = after.split_at(end);
                rest = tail;
                if attr.is_empty() {
                    self.error("ValueError: Empty attribute in format string")
                } else {
                    let sym = self.names.intern(attr);
                    self.get_attr(current, sym)
                }
            } else if let Some(after) = rest.strip_prefix('[') {
                let Some(end) = after.find(']') else {
                    self.heap.decref(current);
                    return self.error("ValueError: Missing ']' in format string");
                };
                let (key, tail) = after.split_at(end);
                rest = &tail[1..];
                if !(rest.is_empty() || rest.starts_with(['.', '['])) {
                    self.heap.decref(current);
                    return self.error(
                        "ValueError: Only '.' or '[' may follow ']' in format field specifier",
                    );
                }
                let key = match key.parse::<i64>() {
                    Ok(i) if key.bytes().all(|b| b.is_ascii_digit()) => Value::Int(i),
                    _ => self.new_str(key),
                };
                self.format_field_item(current, key)
            } else {
                unreachable!("accessors start at '.' or '['")
            };
            self.heap.decref(current);
            current = step?;
        }
        Ok(current)
    }

    /// `obj[key]` for a `{x[key]}` field: containers, strings and user `__getitem__`.
    fn format_field_item(&mut self, obj: Value, key: Value) -> R<Value> {
        if self.user_special(obj, "__getitem__").is_some() {
            return self
                .call_special(obj, "__getitem__", vec![key])
                .unwrap_or_else(|_| unreachable!("checked above"));
        }
        match obj {
            Value::Obj(id) => super::natives::item(self, id, key),
            Value::Str(text) => {
                let Value::Int(i) = key else {
                    return self.error("TypeError: string indices must be integers, not 'str'");
                };
                let chars: Vec<char> = self.names.name(text).chars().collect();
                match chars.get(i as usize) {
                    Some(c) => Ok(self.new_str(&c.to_string())),
                    None => self.error("IndexError: string index out of range"),
                }
            }
            other => {
                let name = self.value_type_name(other);
                self.error(format!("TypeError: '{name}' object is not subscriptable"))
            }
        }
    }

    /// One replacement field: `v`, converted by `!r`/`!s`/`!a`, formatted with `spec` as
    /// `format(v, spec)` does (f-strings and `str.format`).
    pub(in crate::python) fn format_field(
        &mut self,
        v: Value,
        conversion: Option<char>,
        spec: &str,
    ) -> R<String> {
        let converted = match conversion {
            None => None,
            Some('s') => Some(self.display(v)),
            Some('r' | 'a') => Some(self.repr_text(v)),
            Some(c) => {
                return self.error(format!("ValueError: Unknown conversion specifier {c}"));
            }
        };
        if spec.is_empty() {
            return Ok(converted.unwrap_or_else(|| self.display(v)));
        }
        let parsed = self.format_result(Spec::parse(spec))?;
        if let Some(text) = converted {
            return self.format_result(format_spec::format_str_value(&text, &parsed));
        }
        let result = match v {
            Value::Int(i) => format_spec::format_int(i, &parsed),
            Value::Bool(b) => format_spec::format_int(i64::from(b), &parsed),
            Value::Float(f) => format_spec::format_float(f, &parsed),
            Value::Str(s) => format_spec::format_str_value(&self.names.name_rc(s), &parsed),
            // `Tensor.__format__` formats `self.item()` for a 0-dim tensor.
            Value::Obj(t) if matches!(self.heap.kind(t), ObjKind::Tensor(x) if x.shape.is_empty()) => {
                match super::tensor_pieces::to_number(self, t, false)? {
                    Value::Float(f) => format_spec::format_float(f, &parsed),
                    Value::Int(i) => format_spec::format_int(i, &parsed),
                    other => return Ok(self.display(other)),
                }
            }
            Value::Obj(o) if matches!(self.heap.kind(o), ObjKind::Instance { .. }) => {
                return self.unsupported("a format spec applied to an instance of a user class");
            }
            other => {
                let type_name = self.type_name_of(other);
                return self.error(format!(
                    "TypeError: unsupported format string passed to {type_name}.__format__"
                ));
            }
        };
        self.format_result(result)
    }

    fn format_result<T>(&self, result: Result<T, FormatError>) -> R<T> {
        match result {
            Ok(v) => Ok(v),
            Err(FormatError::Value(message)) => self.error(message),
            Err(FormatError::Unsupported(what)) => self.unsupported(what),
        }
    }

    /// `"fmt" % args`: every printf-style conversion (`%s %r %a %d %i %u %x %X %o %c %e %E
    /// %f %F %g %G %%`) with flags, width, precision and `%(key)s` mapping keys.
    pub(super) fn percent_format(&mut self, fmt: Sym, args: Value) -> R<Value> {
        let text = self.names.name_rc(fmt);
        let mapping =
            matches!(args, Value::Obj(o) if matches!(self.heap.kind(o), ObjKind::Dict(_)));
        let values: Vec<Value> = match args {
            Value::Obj(o) => match self.heap.kind(o) {
                ObjKind::Tuple(items) => items.clone(),
                _ => vec![args],
            },
            other => vec![other],
        };
        let mut out = String::new();
        let mut next = 0usize;
        let mut used_key = false;
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            let Some(directive) = self.format_result(format_spec::parse_directive(&mut chars))?
            else {
                out.push('%');
                continue;
            };
            let v = match &directive.key {
                Some(key) => {
                    used_key = true;
                    let Value::Obj(d) = args else {
                        return self.error("TypeError: format requires a mapping");
                    };
                    let ObjKind::Dict(entries) = self.heap.kind(d) else {
                        return self.error("TypeError: format requires a mapping");
                    };
                    let found = entries.iter().find_map(|(k, v)| match k {
                        Value::Str(s) if &*self.names.name_rc(*s) == key.as_str() => Some(*v),
                        _ => None,
                    });
                    match found {
                        Some(v) => v,
                        None => return self.error(format!("KeyError: '{key}'")),
                    }
                }
                None => {
                    let Some(&v) = values.get(next) else {
                        return self.error("TypeError: not enough arguments for format string");
                    };
                    next += 1;
                    v
                }
            };
            let piece = self.printf_conversion(v, &directive)?;
            out.push_str(&piece);
        }
        if !used_key && !mapping && next < values.len() {
            return self.error("TypeError: not all arguments converted during string formatting");
        }
        Ok(self.new_str(&out))
    }

    /// One `%` directive applied to its value, with CPython's type errors.
    fn printf_conversion(&mut self, v: Value, d: &format_spec::Directive) -> R<String> {
        let spec = &d.spec;
        let conv = d.conversion;
        match conv {
            's' => {
                let text = self.display(v);
                return Ok(format_spec::printf_text(&text, spec));
            }
            'r' | 'a' => {
                let text = self.repr_text(v);
                return Ok(format_spec::printf_text(&text, spec));
            }
            'c' => {
                return match v {
                    Value::Str(s) if self.names.name(s).chars().count() == 1 => {
                        let text = self.names.name(s).to_string();
                        Ok(format_spec::printf_text(&text, spec))
                    }
                    Value::Int(i) => self.format_result(format_spec::printf_int(i, 'c', spec)),
                    _ => self.error("TypeError: %c requires an int or a unicode character"),
                };
            }
            _ => {}
        }
        let number = match v {
            Value::Obj(t) if self.is_tensor(v) => super::tensor_pieces::to_number(
                self,
                t,
                matches!(conv, 'd' | 'i' | 'u' | 'x' | 'X' | 'o'),
            )?,
            other => other,
        };
        let result = match (conv, number) {
            ('d' | 'i' | 'u' | 'x' | 'X' | 'o', Value::Int(i)) => {
                format_spec::printf_int(i, conv, spec)
            }
            ('d' | 'i' | 'u' | 'x' | 'X' | 'o', Value::Bool(b)) => {
                format_spec::printf_int(i64::from(b), conv, spec)
            }
            ('d' | 'i' | 'u', Value::Float(f)) if f.is_finite() => {
                format_spec::printf_int(f.trunc() as i64, conv, spec)
            }
            ('e' | 'E' | 'f' | 'F' | 'g' | 'G', Value::Int(i)) => {
                format_spec::printf_float(i as f64, conv, spec)
            }
            ('e' | 'E' | 'f' | 'F' | 'g' | 'G', Value::Bool(b)) => {
                format_spec::printf_float(f64::from(u8::from(b)), conv, spec)
            }
            ('e' | 'E' | 'f' | 'F' | 'g' | 'G', Value::Float(f)) => {
                format_spec::printf_float(f, conv, spec)
            }
            ('d' | 'i' | 'u', Value::Float(_)) => {
                return self
                    .error("OverflowError: cannot convert float infinity or NaN to integer");
            }
            ('x' | 'X' | 'o', other) => {
                let type_name = self.type_name_of(other);
                return self.error(format!(
                    "TypeError: %{conv} format: an integer is required, not {type_name}"
                ));
            }
            ('d' | 'i' | 'u', other) => {
                let type_name = self.type_name_of(other);
                return self.error(format!(
                    "TypeError: %{conv} format: a real number is required, not {type_name}"
                ));
            }
            ('e' | 'E' | 'f' | 'F' | 'g' | 'G', other) => {
                let type_name = self.type_name_of(other);
                return self.error(format!("TypeError: must be real number, not {type_name}"));
            }
            _ => {
                return self.error(format!(
                    "ValueError: unsupported format character '{conv}' (0x{:x})",
                    conv as u32
                ));
            }
        };
        self.format_result(result)
    }
}

impl<'a> Interpreter<'a> {
    /// One `{expr!conv:spec}` of an f-string, `v` being `expr`'s value (borrowed); a spec
    /// with nested fields (`{x:>{width}}`) evaluates them first, as CPython does.
    pub(in crate::python) fn fstring_piece(
        &mut self,
        v: Value,
        element: &'a ruff_python_ast::InterpolatedElement,
    ) -> R<String> {
        use ruff_python_ast::InterpolatedStringElement;
        let mut spec = String::new();
        if let Some(format_spec) = &element.format_spec {
            for part in format_spec.elements.iter() {
                match part {
                    InterpolatedStringElement::Literal(l) => spec.push_str(&l.value),
                    InterpolatedStringElement::Interpolation(inner) => {
                        let nested = self.eval(&inner.expression)?;
                        let piece = self.fstring_piece(nested, inner);
                        self.heap.decref(nested);
                        spec.push_str(&piece?);
                    }
                }
            }
        }
        self.fstring_piece_with(v, element, &spec)
    }

    /// [`Interpreter::fstring_piece`] with the spec's text already made. A self-documenting
    /// field (`{x=}`, 3.8+) writes its source text up to the conversion or spec first, and
    /// converts with `repr()` unless it has a conversion or a spec.
    pub(in crate::python) fn fstring_piece_with(
        &mut self,
        v: Value,
        element: &ruff_python_ast::InterpolatedElement,
        spec: &str,
    ) -> R<String> {
        use ruff_python_ast::ConversionFlag;
        let debug = element.debug_text.as_ref().map(|d| d.as_str());
        let conversion = match element.conversion {
            ConversionFlag::None if debug.is_some() && element.format_spec.is_none() => Some('r'),
            ConversionFlag::None => None,
            ConversionFlag::Str => Some('s'),
            ConversionFlag::Ascii => Some('a'),
            ConversionFlag::Repr => Some('r'),
        };
        let piece = self.format_field(v, conversion, spec)?;
        Ok(match debug {
            Some(text) => format!("{text}{piece}"),
            None => piece,
        })
    }
}
