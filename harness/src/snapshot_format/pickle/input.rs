//! The buffered byte source of the decoder: offsets for errors, lengths trusted only as far
//! as the bytes are there.

use std::io::Read;

/// A buffered byte source that knows its offset.
pub(super) struct Input<R> {
    reader: R,
    pub(super) buf: Box<[u8]>,
    pub(super) pos: usize,
    pub(super) end: usize,
    /// Offset of `buf[0]` in the input.
    base: u64,
}

const CHUNK: usize = 1 << 18;

impl<R: Read> Input<R> {
    pub(super) fn new(reader: R) -> Self {
        Input {
            reader,
            buf: vec![0; CHUNK].into_boxed_slice(),
            pos: 0,
            end: 0,
            base: 0,
        }
    }

    pub(super) fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Makes at least one byte available; false at end of input.
    pub(super) fn fill(&mut self) -> std::io::Result<bool> {
        if self.pos < self.end {
            return Ok(true);
        }
        self.base += self.end as u64;
        self.pos = 0;
        self.end = 0;
        loop {
            match self.reader.read(&mut self.buf) {
                Ok(n) => {
                    self.end = n;
                    return Ok(n > 0);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    #[inline(always)]
    pub(super) fn byte(&mut self) -> std::io::Result<Option<u8>> {
        if self.pos < self.end || self.fill()? {
            let b = self.buf[self.pos];
            self.pos += 1;
            Ok(Some(b))
        } else {
            Ok(None)
        }
    }

    /// Fills `out` completely; false if the input ended first.
    #[inline]
    pub(super) fn exact(&mut self, out: &mut [u8]) -> std::io::Result<bool> {
        if self.pos + out.len() <= self.end {
            out.copy_from_slice(&self.buf[self.pos..self.pos + out.len()]);
            self.pos += out.len();
            return Ok(true);
        }
        self.exact_across(out)
    }

    /// [`Input::exact`] when `out` spans the end of the buffer.
    pub(super) fn exact_across(&mut self, out: &mut [u8]) -> std::io::Result<bool> {
        let mut done = 0;
        while done < out.len() {
            if !self.fill()? {
                return Ok(false);
            }
            let n = (out.len() - done).min(self.end - self.pos);
            out[done..done + n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
            self.pos += n;
            done += n;
        }
        Ok(true)
    }

    /// Reads `len` bytes, growing the result only as bytes arrive (a forged length cannot make
    /// it allocate more than the input holds). `None` if the input ended first.
    pub(super) fn vec(&mut self, len: u64) -> std::io::Result<Option<Vec<u8>>> {
        let mut out = Vec::with_capacity((len as usize).min(CHUNK));
        while (out.len() as u64) < len {
            if !self.fill()? {
                return Ok(None);
            }
            let n = ((len - out.len() as u64) as usize).min(self.end - self.pos);
            out.extend_from_slice(&self.buf[self.pos..self.pos + n]);
            self.pos += n;
        }
        Ok(Some(out))
    }
}
