//! More `str` methods that training scripts use to lay out their logs and parse names:
//! padding (`ljust`, `rjust`, `center`, `zfill`), searching (`find`, `rfind`, `index`,
//! `count`), classification (`isdigit`, `isalpha`, ...), case (`title`, `capitalize`),
//! splitting with `maxsplit`, `partition`, `strip(chars)`, `removeprefix`. Indices are in
//! characters, as CPython's are.

use super::interp::{Interpreter, R};
use crate::heap::{ObjKind, Value};

impl<'a> Interpreter<'a> {
    /// `text.method(*args)`; `None` when the method is not modelled here.
    pub(super) fn str_text_method(
        &mut self,
        text: &str,
        method: &str,
        args: &[Value],
    ) -> Option<R<Value>> {
        let s = |it: &Self, i: usize| -> Option<String> {
            match args.get(i) {
                Some(Value::Str(a)) => Some(it.names.name(*a).to_string()),
                _ => None,
            }
        };
        let int = |i: usize| -> Option<i64> {
            match args.get(i) {
                Some(Value::Int(n)) => Some(*n),
                Some(Value::Bool(b)) => Some(i64::from(*b)),
                _ => None,
            }
        };
        let len = text.chars().count();
        let out = match (method, args.len()) {
            ("ljust" | "rjust" | "center", 1 | 2) => {
                let Some(width) = int(0) else {
                    return Some(self.error("TypeError: an integer is required for the width"));
                };
                let fill = match args.get(1) {
                    None => ' ',
                    Some(_) => match s(self, 1) {
                        Some(f) if f.chars().count() == 1 => f.chars().next().unwrap_or(' '),
                        _ => {
                            return Some(self.error(
                                "TypeError: The fill character must be exactly one character long",
                            ));
                        }
                    },
                };
                let width = usize::try_from(width).unwrap_or(0);
                if let Err(e) = self.budget_bytes(width as u64) {
                    return Some(Err(e));
                }
                let margin = width.saturating_sub(len);
                // CPython's `pad`: `center` puts the odd character on the left when the
                // width is odd (`left = marg / 2 + (marg & width & 1)`).
                let (left, right) = match method {
                    "ljust" => (0, margin),
                    "rjust" => (margin, 0),
                    _ => {
                        let left = margin / 2 + (margin & width & 1);
                        (left, margin - left)
                    }
                };
                let f = fill.to_string();
                self.new_str(&format!("{}{text}{}", f.repeat(left), f.repeat(right)))
            }
            ("zfill", 1) => {
                let width = usize::try_from(int(0).unwrap_or(0)).unwrap_or(0);
                if let Err(e) = self.budget_bytes(width as u64) {
                    return Some(Err(e));
                }
                let margin = width.saturating_sub(len);
                let (sign, rest) = match text.chars().next() {
                    Some(c @ ('+' | '-')) => (c.to_string(), &text[1..]),
                    _ => (String::new(), text),
                };
                self.new_str(&format!("{sign}{}{rest}", "0".repeat(margin)))
            }
            ("count", 1) => match s(self, 0) {
                Some(sub) if sub.is_empty() => Value::Int(len as i64 + 1),
                Some(sub) => Value::Int(text.matches(sub.as_str()).count() as i64),
                None => return Some(self.error("TypeError: must be str")),
            },
            ("find" | "rfind" | "index" | "rindex", 1) => {
                let Some(sub) = s(self, 0) else {
                    return Some(self.error("TypeError: must be str"));
                };
                let at = if method.starts_with('r') {
                    text.rfind(sub.as_str())
                } else {
                    text.find(sub.as_str())
                };
                match at {
                    Some(byte) => Value::Int(text[..byte].chars().count() as i64),
                    None if method.ends_with("index") => {
                        return Some(self.error("ValueError: substring not found"));
                    }
                    None => Value::Int(-1),
                }
            }
            ("isdigit" | "isdecimal" | "isnumeric", 0) => {
                Value::Bool(len > 0 && text.chars().all(|c| c.is_ascii_digit()))
            }
            ("isalpha", 0) => Value::Bool(len > 0 && text.chars().all(char::is_alphabetic)),
            ("isalnum", 0) => Value::Bool(len > 0 && text.chars().all(char::is_alphanumeric)),
            ("isspace", 0) => Value::Bool(len > 0 && text.chars().all(char::is_whitespace)),
            ("isupper" | "islower", 0) => {
                let cased: Vec<char> = text.chars().filter(|c| c.is_alphabetic()).collect();
                let want_upper = method == "isupper";
                Value::Bool(
                    !cased.is_empty()
                        && cased.iter().all(|c| {
                            if want_upper {
                                !c.is_lowercase()
                            } else {
                                !c.is_uppercase()
                            }
                        }),
                )
            }
            ("capitalize", 0) => {
                let mut chars = text.chars();
                let first: String = chars
                    .next()
                    .map(|c| c.to_uppercase().collect())
                    .unwrap_or_default();
                self.new_str(&format!("{first}{}", chars.as_str().to_lowercase()))
            }
            ("title", 0) => {
                let mut out = String::with_capacity(text.len());
                let mut previous_cased = false;
                for c in text.chars() {
                    if previous_cased {
                        out.extend(c.to_lowercase());
                    } else {
                        out.extend(c.to_uppercase());
                    }
                    previous_cased = c.is_alphabetic();
                }
                self.new_str(&out)
            }
            ("swapcase", 0) => {
                let out: String = text
                    .chars()
                    .flat_map(|c| {
                        if c.is_uppercase() {
                            c.to_lowercase().collect::<Vec<_>>()
                        } else {
                            c.to_uppercase().collect::<Vec<_>>()
                        }
                    })
                    .collect();
                self.new_str(&out)
            }
            ("strip" | "lstrip" | "rstrip", 1) => {
                let chars: Vec<char> = match args[0] {
                    Value::None => return self.str_text_method(text, method, &[]),
                    _ => match s(self, 0) {
                        Some(c) => c.chars().collect(),
                        None => {
                            return Some(self.error("TypeError: strip arg must be None or str"));
                        }
                    },
                };
                let is = |c: char| chars.contains(&c);
                let out = match method {
                    "strip" => text.trim_matches(is),
                    "lstrip" => text.trim_start_matches(is),
                    _ => text.trim_end_matches(is),
                };
                self.new_str(out)
            }
            ("strip", 0) => self.new_str(text.trim()),
            ("lstrip", 0) => self.new_str(text.trim_start()),
            ("rstrip", 0) => self.new_str(text.trim_end()),
            ("removeprefix", 1) => match s(self, 0) {
                Some(p) => self.new_str(text.strip_prefix(p.as_str()).unwrap_or(text)),
                None => return Some(self.error("TypeError: removeprefix() argument must be str")),
            },
            ("removesuffix", 1) => match s(self, 0) {
                Some(p) => self.new_str(text.strip_suffix(p.as_str()).unwrap_or(text)),
                None => return Some(self.error("TypeError: removesuffix() argument must be str")),
            },
            ("partition" | "rpartition", 1) => {
                let Some(sep) = s(self, 0) else {
                    return Some(self.error("TypeError: must be str"));
                };
                if sep.is_empty() {
                    return Some(self.error("ValueError: empty separator"));
                }
                let found = if method == "partition" {
                    text.split_once(sep.as_str())
                } else {
                    text.rsplit_once(sep.as_str())
                };
                let (a, b, c) = match (found, method) {
                    (Some((l, r)), _) => (l, sep.as_str(), r),
                    (None, "partition") => (text, "", ""),
                    (None, _) => ("", "", text),
                };
                let items = vec![self.new_str(a), self.new_str(b), self.new_str(c)];
                Value::Obj(self.alloc(ObjKind::Tuple(items)))
            }
            ("split" | "rsplit", 1 | 2) if args.len() == 2 || method == "rsplit" => {
                let sep = match args[0] {
                    Value::None => None,
                    _ => match s(self, 0) {
                        Some(sep) if sep.is_empty() => {
                            return Some(self.error("ValueError: empty separator"));
                        }
                        Some(sep) => Some(sep),
                        None => return Some(self.error("TypeError: must be str or None")),
                    },
                };
                let maxsplit = int(1).unwrap_or(-1);
                let pieces = split_text(text, sep.as_deref(), maxsplit, method == "rsplit");
                let items: Vec<Value> = pieces.iter().map(|p| self.new_str(p)).collect();
                Value::Obj(self.alloc(ObjKind::List(items)))
            }
            ("splitlines", 0) => {
                let items: Vec<Value> = text.lines().map(|p| self.new_str(p)).collect();
                Value::Obj(self.alloc(ObjKind::List(items)))
            }
            _ => return None,
        };
        Some(Ok(out))
    }
}

/// `str.split`/`str.rsplit` with `maxsplit` (negative: no limit); `sep` `None` splits on
/// runs of whitespace and drops empty pieces at the ends, as CPython does.
fn split_text(text: &str, sep: Option<&str>, maxsplit: i64, from_right: bool) -> Vec<String> {
    let limit = usize::try_from(maxsplit).ok();
    match (sep, from_right) {
        (Some(sep), false) => match limit {
            Some(n) => text.splitn(n + 1, sep).map(str::to_string).collect(),
            None => text.split(sep).map(str::to_string).collect(),
        },
        (Some(sep), true) => {
            let mut v: Vec<String> = match limit {
                Some(n) => text.rsplitn(n + 1, sep).map(str::to_string).collect(),
                None => text.rsplit(sep).map(str::to_string).collect(),
            };
            v.reverse();
            v
        }
        (None, _) => {
            let words: Vec<&str> = text.split_whitespace().collect();
            let Some(n) = limit.filter(|&n| n < words.len().saturating_sub(1)) else {
                return words.into_iter().map(str::to_string).collect();
            };
            if from_right {
                let mut rest = text.trim_end();
                let mut out = Vec::new();
                for _ in 0..n {
                    let start = rest
                        .char_indices()
                        .rev()
                        .find(|(_, c)| c.is_whitespace())
                        .map_or(0, |(i, c)| i + c.len_utf8());
                    out.push(rest[start..].to_string());
                    rest = rest[..start].trim_end();
                }
                out.push(rest.to_string());
                out.reverse();
                out
            } else {
                let trimmed = text.trim_start();
                let mut rest = trimmed;
                let mut out = Vec::new();
                for _ in 0..n {
                    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
                    out.push(rest[..end].to_string());
                    rest = rest[end..].trim_start();
                }
                out.push(rest.to_string());
                out
            }
        }
    }
}
