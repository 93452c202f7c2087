//! Python's format-spec mini-language (`format(v, spec)`, `str.format`, f-strings) and the
//! printf-style conversions of `"..." % args`, for the scalars the model has: ints, bools,
//! floats and strings. Leak reports print memory figures with `{:.2f}`, `%5d`, `{:,}`;
//! the text follows CPython's `Python/formatter_unicode.c` and `pystrtod.c` rules
//! (shortest-repr floats, `g` switching to exponents, sign-aware zero padding, grouping).

/// Why a spec cannot be applied: CPython's `ValueError`/`TypeError` text, or a part of the
/// mini-language the model does not apply.
#[derive(Debug, PartialEq)]
pub(super) enum FormatError {
    Value(String),
    Unsupported(&'static str),
}

type Fmt<T> = Result<T, FormatError>;

/// A parsed `[[fill]align][sign][#][0][width][grouping][.precision][type]`.
#[derive(Clone, Debug, Default)]
pub(super) struct Spec {
    fill: Option<char>,
    align: Option<char>,
    sign: Option<char>,
    alternate: bool,
    zero: bool,
    width: usize,
    grouping: Option<char>,
    precision: Option<usize>,
    kind: Option<char>,
}

fn digits_at(chars: &[char], i: &mut usize) -> Option<usize> {
    let start = *i;
    while *i < chars.len() && chars[*i].is_ascii_digit() {
        *i += 1;
    }
    (*i > start).then(|| {
        chars[start..*i]
            .iter()
            .collect::<String>()
            .parse()
            .unwrap_or(usize::MAX)
    })
}

impl Spec {
    pub(super) fn parse(spec: &str) -> Fmt<Spec> {
        let chars: Vec<char> = spec.chars().collect();
        let mut s = Spec::default();
        let mut i = 0;
        let is_align = |c: char| matches!(c, '<' | '>' | '=' | '^');
        if chars.len() >= 2 && is_align(chars[1]) {
            s.fill = Some(chars[0]);
            s.align = Some(chars[1]);
            i = 2;
        } else if !chars.is_empty() && is_align(chars[0]) {
            s.align = Some(chars[0]);
            i = 1;
        }
        if let Some(&c @ ('+' | '-' | ' ')) = chars.get(i) {
            s.sign = Some(c);
            i += 1;
        }
        if chars.get(i) == Some(&'z') {
            return Err(FormatError::Unsupported("the `z` option of a format spec"));
        }
        if chars.get(i) == Some(&'#') {
            s.alternate = true;
            i += 1;
        }
        if chars.get(i) == Some(&'0') {
            s.zero = true;
            i += 1;
        }
        s.width = digits_at(&chars, &mut i).unwrap_or(0);
        if let Some(&c @ (',' | '_')) = chars.get(i) {
            s.grouping = Some(c);
            i += 1;
        }
        if chars.get(i) == Some(&'.') {
            i += 1;
            match digits_at(&chars, &mut i) {
                Some(p) => s.precision = Some(p),
                None => return Err(value_error("Format specifier missing precision")),
            }
        }
        match chars.len() - i {
            0 => {}
            1 => s.kind = Some(chars[i]),
            _ => return Err(value_error("Invalid format specifier")),
        }
        if s.zero && s.fill.is_none() {
            s.fill = Some('0');
            if s.align.is_none() {
                s.align = Some('=');
            }
        }
        Ok(s)
    }

    fn unknown_code(&self, type_name: &str) -> FormatError {
        value_error(&format!(
            "Unknown format code '{}' for object of type '{type_name}'",
            self.kind.unwrap_or(' ')
        ))
    }
}

fn value_error(message: &str) -> FormatError {
    FormatError::Value(format!("ValueError: {message}"))
}

/// `format(i, spec)` for an int.
pub(super) fn format_int(i: i64, spec: &Spec) -> Fmt<String> {
    if matches!(spec.kind, Some('e' | 'E' | 'f' | 'F' | 'g' | 'G' | '%')) {
        return format_float(i as f64, spec);
    }
    if spec.precision.is_some() {
        return Err(value_error(
            "Precision not allowed in integer format specifier",
        ));
    }
    int_body(i, spec, 0)
}

/// The digits of an int, at least `min_digits` of them (printf's `%.3d`), padded.
fn int_body(i: i64, spec: &Spec, min_digits: usize) -> Fmt<String> {
    let magnitude = i.unsigned_abs();
    let (mut digits, prefix, group_every) = match spec.kind {
        None | Some('d') | Some('n') => (magnitude.to_string(), "", 3),
        Some('x') => (format!("{magnitude:x}"), "0x", 4),
        Some('X') => (format!("{magnitude:X}"), "0X", 4),
        Some('o') => (format!("{magnitude:o}"), "0o", 4),
        Some('b') => (format!("{magnitude:b}"), "0b", 4),
        Some('c') => {
            let c = u32::try_from(i)
                .ok()
                .and_then(char::from_u32)
                .ok_or_else(|| {
                    FormatError::Value("OverflowError: %c arg not in range(0x110000)".into())
                })?;
            return Ok(pad("", &c.to_string(), spec, '<'));
        }
        _ => return Err(spec.unknown_code("int")),
    };
    if digits.len() < min_digits {
        digits = format!("{}{digits}", "0".repeat(min_digits - digits.len()));
    }
    if let Some(sep) = spec.grouping {
        if sep == ',' && group_every == 4 {
            return Err(value_error("Cannot specify ',' with 'x'."));
        }
        digits = group(&digits, sep, group_every);
    }
    let prefix = if spec.alternate { prefix } else { "" };
    let sign = sign_text(i < 0, spec);
    Ok(pad(&format!("{sign}{prefix}"), &digits, spec, '>'))
}

fn sign_text(negative: bool, spec: &Spec) -> &'static str {
    match (negative, spec.sign) {
        (true, _) => "-",
        (false, Some('+')) => "+",
        (false, Some(' ')) => " ",
        _ => "",
    }
}

/// `1234567` → `1,234,567` (every `every` digits from the right).
fn group(digits: &str, sep: char, every: usize) -> String {
    let chars: Vec<char> = digits.chars().collect();
    let mut out = String::new();
    for (n, c) in chars.iter().enumerate() {
        if n > 0 && (chars.len() - n).is_multiple_of(every) {
            out.push(sep);
        }
        out.push(*c);
    }
    out
}

/// Pads `sign + body` to the spec's width; `=` puts the fill between sign and digits.
fn pad(sign: &str, body: &str, spec: &Spec, default_align: char) -> String {
    let len = sign.chars().count() + body.chars().count();
    let missing = spec.width.saturating_sub(len);
    let fill = spec.fill.unwrap_or(' ').to_string();
    match spec.align.unwrap_or(default_align) {
        '<' => format!("{sign}{body}{}", fill.repeat(missing)),
        '^' => format!(
            "{}{sign}{body}{}",
            fill.repeat(missing / 2),
            fill.repeat(missing - missing / 2)
        ),
        '=' => format!("{sign}{}{body}", fill.repeat(missing)),
        _ => format!("{}{sign}{body}", fill.repeat(missing)),
    }
}

/// `format(f, spec)` for a float.
pub(super) fn format_float(f: f64, spec: &Spec) -> Fmt<String> {
    let upper = matches!(spec.kind, Some('E' | 'F' | 'G'));
    let magnitude = f.abs();
    let mut body = if f.is_nan() {
        "nan".to_string()
    } else if f.is_infinite() {
        "inf".to_string()
    } else {
        match (spec.kind, spec.precision) {
            (Some('f' | 'F'), p) => format!("{:.*}", p.unwrap_or(6), magnitude),
            (Some('e' | 'E'), p) => scientific(magnitude, p.unwrap_or(6)),
            (Some('g' | 'G' | 'n'), p) => general(magnitude, p.unwrap_or(6), spec.alternate, false),
            (Some('%'), p) => format!("{:.*}%", p.unwrap_or(6), magnitude * 100.0),
            (None, None) => float_repr(magnitude),
            (None, Some(p)) => general(magnitude, p, spec.alternate, true),
            _ => return Err(spec.unknown_code("float")),
        }
    };
    if upper {
        body = body.to_uppercase();
    }
    if let Some(sep) = spec.grouping {
        let split = body
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(body.len());
        body = format!("{}{}", group(&body[..split], sep, 3), &body[split..]);
    }
    let sign = sign_text(f.is_sign_negative() && !f.is_nan(), spec);
    Ok(pad(sign, &body, spec, '>'))
}

/// `%e`: `1.234568e+04` (at least two exponent digits).
fn scientific(magnitude: f64, precision: usize) -> String {
    let text = format!("{magnitude:.precision$e}");
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    exponent_form(mantissa, exponent.parse().unwrap_or(0))
}

fn exponent_form(mantissa: &str, exponent: i32) -> String {
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs())
}

/// `%g` (and the spec without a type but with a precision, `repr_like`): `precision`
/// significant digits, fixed notation unless the exponent is below -4 or too large,
/// trailing zeros removed unless `#`.
fn general(magnitude: f64, precision: usize, alternate: bool, repr_like: bool) -> String {
    let precision = precision.max(1);
    let exponent: i32 = if magnitude == 0.0 {
        0
    } else {
        let text = format!("{magnitude:.*e}", precision - 1);
        text.split_once('e')
            .map_or(0, |(_, e)| e.parse().unwrap_or(0))
    };
    let limit = if repr_like {
        precision as i32 - 1
    } else {
        precision as i32
    };
    let text = if exponent < -4 || exponent >= limit {
        let full = scientific(magnitude, precision - 1);
        let (mantissa, exp) = full.split_once('e').unwrap_or((&full, ""));
        let mantissa = if alternate {
            mantissa.to_string()
        } else {
            trim_zeros(mantissa)
        };
        return format!("{mantissa}e{exp}");
    } else {
        format!("{magnitude:.*}", (precision as i32 - 1 - exponent) as usize)
    };
    let text = if alternate { text } else { trim_zeros(&text) };
    if repr_like && !text.contains('.') {
        format!("{text}.0")
    } else {
        text
    }
}

fn trim_zeros(text: &str) -> String {
    if !text.contains('.') {
        return text.to_string();
    }
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `repr(f)`: the shortest text that reads back as `f`, in exponent form when the
/// exponent is below -4 or at least 16, as `float_repr_style = 'short'` prints it.
pub(super) fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    let shortest = format!("{f:e}");
    let (mantissa, exponent) = shortest.split_once('e').unwrap_or((&shortest, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..16).contains(&exponent) {
        let fixed = format!("{f}");
        if fixed.contains('.') {
            fixed
        } else {
            format!("{fixed}.0")
        }
    } else {
        exponent_form(mantissa, exponent)
    }
}

/// `format(s, spec)` for a str.
pub(super) fn format_str_value(s: &str, spec: &Spec) -> Fmt<String> {
    if !matches!(spec.kind, None | Some('s')) {
        return Err(spec.unknown_code("str"));
    }
    if spec.sign.is_some() {
        return Err(value_error("Sign not allowed in string format specifier"));
    }
    if spec.alternate {
        return Err(value_error(
            "Alternate form (#) not allowed in string format specifier",
        ));
    }
    if spec.align == Some('=') {
        return Err(value_error(
            "'=' alignment not allowed in string format specifier",
        ));
    }
    let body: String = match spec.precision {
        Some(p) => s.chars().take(p).collect(),
        None => s.to_string(),
    };
    Ok(pad("", &body, spec, '<'))
}

/// One printf-style directive after its `%`: `(key)`, flags, width, precision, conversion.
#[derive(Debug)]
pub(super) struct Directive {
    pub key: Option<String>,
    pub spec: Spec,
    pub conversion: char,
}

/// Reads the directive starting after a `%`; `Ok(None)` for `%%`.
pub(super) fn parse_directive(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
) -> Fmt<Option<Directive>> {
    let mut key = None;
    if chars.peek() == Some(&'(') {
        chars.next();
        let mut name = String::new();
        let mut depth = 1;
        for c in chars.by_ref() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            name.push(c);
        }
        if depth != 0 {
            return Err(value_error("incomplete format key"));
        }
        key = Some(name);
    }
    let mut spec = Spec::default();
    let mut left = false;
    while let Some(&c) = chars.peek() {
        match c {
            '-' => left = true,
            '+' => spec.sign = Some('+'),
            ' ' if spec.sign.is_none() => spec.sign = Some(' '),
            ' ' => {}
            '#' => spec.alternate = true,
            '0' => spec.zero = true,
            _ => break,
        }
        chars.next();
    }
    let number = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| -> Fmt<Option<usize>> {
        if chars.peek() == Some(&'*') {
            return Err(FormatError::Unsupported(
                "a `*` width or precision in `%` formatting",
            ));
        }
        let mut digits = String::new();
        while let Some(&d) = chars.peek().filter(|d| d.is_ascii_digit()) {
            digits.push(d);
            chars.next();
        }
        Ok((!digits.is_empty()).then(|| digits.parse().unwrap_or(usize::MAX)))
    };
    spec.width = number(chars)?.unwrap_or(0);
    if chars.peek() == Some(&'.') {
        chars.next();
        spec.precision = Some(number(chars)?.unwrap_or(0));
    }
    while matches!(chars.peek(), Some('h' | 'l' | 'L')) {
        chars.next();
    }
    let Some(conversion) = chars.next() else {
        return Err(value_error("incomplete format"));
    };
    if conversion == '%' && key.is_none() {
        return Ok(None);
    }
    if left {
        spec.align = Some('<');
    } else if spec.zero && !matches!(conversion, 's' | 'r' | 'a' | 'c') {
        spec.fill = Some('0');
        spec.align = Some('=');
    }
    Ok(Some(Directive {
        key,
        spec,
        conversion,
    }))
}

/// A printf-style conversion of an int (`%d`, `%x`, `%o`, `%c`); `%e`/`%f`/`%g` go to floats.
pub(super) fn printf_int(i: i64, conversion: char, spec: &Spec) -> Fmt<String> {
    let mut spec = spec.clone();
    spec.kind = Some(match conversion {
        'i' | 'u' => 'd',
        c => c,
    });
    // `%#o` is `0o17` in Python 3, as `format(15, '#o')`; `%.3d` pads the digits to 3.
    let min_digits = spec.precision.take().unwrap_or(0);
    int_body(i, &spec, min_digits)
}

/// A printf-style float conversion (`%f`, `%e`, `%g` and upper-case forms).
pub(super) fn printf_float(f: f64, conversion: char, spec: &Spec) -> Fmt<String> {
    let mut spec = spec.clone();
    spec.kind = Some(conversion);
    if spec.precision.is_none() {
        spec.precision = Some(6);
    }
    format_float(f, &spec)
}

/// `%s`/`%r`/`%a` of a text already converted: precision truncates, width pads.
pub(super) fn printf_text(text: &str, spec: &Spec) -> String {
    let body: String = match spec.precision {
        Some(p) => text.chars().take(p).collect(),
        None => text.to_string(),
    };
    pad("", &body, spec, '>')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(v: f64, spec: &str) -> String {
        format_float(v, &Spec::parse(spec).unwrap()).unwrap()
    }

    fn i(v: i64, spec: &str) -> String {
        format_int(v, &Spec::parse(spec).unwrap()).unwrap()
    }

    /// Each expected text was printed by CPython 3.11 for the same call.
    #[test]
    fn specs_print_what_cpython_prints() {
        assert_eq!(f(100.0, ".3"), "1e+02");
        assert_eq!(f(10.0, ".3"), "10.0");
        assert_eq!(f(1e16, ""), "1e+16");
        assert_eq!(f(0.0001, ".3"), "0.0001");
        assert_eq!(f(12345.678, ",.2f"), "12,345.68");
        assert_eq!(f(-3.14259, ">8.3f"), "  -3.143");
        assert_eq!(f(12345.678, "+.2e"), "+1.23e+04");
        assert_eq!(f(0.256, ".1%"), "25.6%");
        assert_eq!(f(-3.14259, "08.3f"), "-003.143");
        assert_eq!(f(1e-5, "g"), "1e-05");
        assert_eq!(f(-0.0, ".1f"), "-0.0");
        assert_eq!(f(f64::INFINITY, ".2f"), "inf");
        assert_eq!(i(1234567, ","), "1,234,567");
        assert_eq!(i(255, "_x"), "ff");
        assert_eq!(i(7, "03d"), "007");
        assert_eq!(i(-42, ">6"), "   -42");
        assert_eq!(i(5, "^5"), "  5  ");
        assert_eq!(float_repr(1e-5), "1e-05");
        assert_eq!(float_repr(1e20), "1e+20");
        assert_eq!(float_repr(0.1), "0.1");
        assert_eq!(float_repr(2.0), "2.0");
        assert_eq!(
            format_str_value("ab", &Spec::parse("*<6").unwrap()).unwrap(),
            "ab****"
        );
        assert_eq!(
            format_str_value("mid", &Spec::parse("^9").unwrap()).unwrap(),
            "   mid   "
        );
        assert!(matches!(
            format_int(3, &Spec::parse(".2").unwrap()),
            Err(FormatError::Value(_))
        ));
    }
}
