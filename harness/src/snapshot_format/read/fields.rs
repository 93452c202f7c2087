//! Typed field access on the decoded pickle tree: ints, strings (shared through the memo),
//! lists, with the path of the field in every error and the decoded-size bound.

use super::*;

impl<'d> Converter<'d, '_> {
    pub(super) fn list(&self, value: Value, path: &str) -> Result<&'d [Value], Error> {
        let streamed = || {
            let identity = self.doc.identity(value);
            identity.is_some_and(|id| self.streamed.contains_key(&id))
        };
        if self.doc.is_released(value) || streamed() {
            return Err(self.released(path));
        }
        match self.doc.view(value) {
            View::List(items) | View::Tuple(items) => Ok(items),
            other => Err(self.error(
                path,
                format!("expected a list, found {}", other.type_with_article()),
            )),
        }
    }

    /// A container met again after its trace entry was converted and released: a snapshot
    /// never shares trace entries (only their frames, which stay readable through the cache).
    pub(super) fn released(&self, path: &str) -> Error {
        self.error(
            path,
            "this object is part of a trace entry already read (a snapshot does not share \
             trace entries or reuse them elsewhere)",
        )
    }

    pub(super) fn field(&self, dict: Value, key: &str, path: &str) -> Result<Value, Error> {
        if self.doc.is_released(dict) {
            return Err(self.released(path));
        }
        if !matches!(self.doc.view(dict), View::Dict(_)) {
            return Err(self.error(
                path,
                format!(
                    "expected a dict, found {}",
                    self.doc.view(dict).type_with_article()
                ),
            ));
        }
        self.doc
            .get(dict, key)
            .ok_or_else(|| self.error(path, format!("missing key `{key}`")))
    }

    pub(super) fn as_int(&self, value: Value, path: &str, key: &str) -> Result<i64, Error> {
        match self.doc.view(value) {
            View::Int(n) => Ok(n),
            View::Bool(b) => Ok(b as i64),
            other => Err(self.error(
                path,
                format!(
                    "`{key}` should be an int, found {}",
                    other.type_with_article()
                ),
            )),
        }
    }

    pub(super) fn int(&self, dict: Value, key: &str, path: &str) -> Result<i64, Error> {
        let v = self.field(dict, key, path)?;
        self.as_int(v, path, key)
    }

    pub(super) fn u64(&self, dict: Value, key: &str, path: &str) -> Result<u64, Error> {
        let n = self.int(dict, key, path)?;
        u64::try_from(n).map_err(|_| self.error(path, format!("`{key}` is negative ({n})")))
    }

    pub(super) fn opt_int(&self, dict: Value, key: &str, path: &str) -> Result<Option<i64>, Error> {
        match self.doc.get(dict, key) {
            Some(v) if self.doc.view(v) != View::None => Ok(Some(self.as_int(v, path, key)?)),
            _ => Ok(None),
        }
    }

    pub(super) fn opt_u64(&self, dict: Value, key: &str, path: &str) -> Result<Option<u64>, Error> {
        match self.opt_int(dict, key, path)? {
            Some(n) => u64::try_from(n)
                .map(Some)
                .map_err(|_| self.error(path, format!("`{key}` is negative ({n})"))),
            None => Ok(None),
        }
    }

    pub(super) fn opt_u32(&self, dict: Value, key: &str, path: &str) -> Result<Option<u32>, Error> {
        match self.opt_int(dict, key, path)? {
            Some(n) => u32::try_from(n)
                .map(Some)
                .map_err(|_| self.error(path, format!("`{key}` is out of range ({n})"))),
            None => Ok(None),
        }
    }

    /// Counts `bytes` more of decoded data; refuses past the bound on decoded size.
    pub(super) fn charge(&self, bytes: u64, path: &str) -> Result<(), Error> {
        let decoded = self.state.decoded_bytes.get().saturating_add(bytes);
        self.state.decoded_bytes.set(decoded);
        let input = self.state.input_bytes.get();
        let limit = input
            .saturating_mul(MAX_DECODED_FACTOR)
            .saturating_add(self.state.decoded_allowance);
        if decoded > limit {
            return Err(self.error(
                path,
                format!(
                    "decoding would produce more than {MAX_DECODED_FACTOR} times the file's \
                     size in strings and stacks ({decoded} bytes from {input} bytes read); \
                     refused as malformed"
                ),
            ));
        }
        Ok(())
    }

    pub(super) fn opt_str(
        &self,
        dict: Value,
        key: &str,
        path: &str,
    ) -> Result<Option<String>, Error> {
        match self.doc.get(dict, key).map(|v| self.doc.view(v)) {
            None | Some(View::None) => Ok(None),
            Some(View::Str(s)) => {
                self.charge(s.len() as u64, path)?;
                Ok(Some(s.to_string()))
            }
            Some(other) => Err(self.error(
                path,
                format!(
                    "`{key}` should be a str, found {}",
                    other.type_with_article()
                ),
            )),
        }
    }

    /// A str field of a frame, annotation or settings dict, shared with every other use of
    /// the same string of the pickle (memo references included); only the first use is
    /// charged.
    pub(super) fn opt_shared_str(
        &mut self,
        dict: Value,
        key: &str,
        path: &str,
    ) -> Result<Option<std::sync::Arc<str>>, Error> {
        let Some(value) = self.doc.get(dict, key) else {
            return Ok(None);
        };
        let slot = self.doc.str_slot(value);
        if let Some(shared) = slot.and_then(|i| self.state.shared_strings.get(&i)) {
            return Ok(Some(shared.clone()));
        }
        match self.doc.view(value) {
            View::None => Ok(None),
            View::Str(s) => {
                self.charge(s.len() as u64, path)?;
                let shared: std::sync::Arc<str> = s.into();
                if let Some(i) = slot {
                    self.state.shared_strings.insert(i, shared.clone());
                }
                Ok(Some(shared))
            }
            other => Err(self.error(
                path,
                format!(
                    "`{key}` should be a str, found {}",
                    other.type_with_article()
                ),
            )),
        }
    }

    /// Raw stream value: `int64(cudaStream_t)`, kept bit for bit.
    pub(super) fn stream(&self, dict: Value, path: &str) -> Result<u64, Error> {
        Ok(self.opt_int(dict, "stream", path)?.unwrap_or(0) as u64)
    }
}
