//! Segments, blocks, trace entries and allocator settings of a snapshot.

use super::*;

impl Converter<'_, '_> {
    pub(super) fn segment(&mut self, seg: Value, path: &str) -> Result<Segment, Error> {
        let address = self.u64(seg, "address", path)?;
        let total_size = self.u64(seg, "total_size", path)?;
        let segment_type = match self.opt_str(seg, "segment_type", path)?.as_deref() {
            Some("small") => SegmentType::Small,
            Some("large") => SegmentType::Large,
            Some(other) => {
                return Err(self.error(path, format!("unknown segment_type {other:?}")));
            }
            None if total_size == crate::allocator::SMALL_BUFFER => SegmentType::Small,
            None => SegmentType::Large,
        };
        let pool_id = match self.doc.get(seg, "segment_pool_id") {
            Some(v) => match self.list(v, path)? {
                [a, b] => (
                    self.as_int(*a, path, "segment_pool_id")?,
                    self.as_int(*b, path, "segment_pool_id")?,
                ),
                _ => return Err(self.error(path, "`segment_pool_id` is not a pair")),
            },
            None => (0, 0),
        };
        let frames = self.frames_of(seg, path)?.unwrap_or_default();
        let blocks_value = self.field(seg, "blocks", path)?;
        let mut blocks = Vec::new();
        let mut next_address = address;
        for (i, b) in self.list(blocks_value, path)?.iter().enumerate() {
            let bpath = format!("{path}.blocks[{i}]");
            let block = self.block(*b, next_address, &bpath)?;
            next_address = block.address.saturating_add(block.size);
            blocks.push(block);
        }
        let overflow = || self.error(path, "block sizes add up to more than 64 bits");
        let sum = |f: &dyn Fn(&Block) -> u64| {
            blocks
                .iter()
                .try_fold(0u64, |total, b| total.checked_add(f(b)))
                .ok_or_else(overflow)
        };
        let allocated = sum(&|b| {
            if b.state == BlockState::ActiveAllocated {
                b.size
            } else {
                0
            }
        })?;
        let active = sum(&|b| {
            if b.state != BlockState::Inactive {
                b.size
            } else {
                0
            }
        })?;
        let requested = sum(&|b| {
            if b.state != BlockState::Inactive {
                b.requested_size
            } else {
                0
            }
        })?;
        Ok(Segment {
            device: self.opt_u32(seg, "device", path)?.unwrap_or(0),
            address,
            total_size,
            allocated_size: self
                .opt_u64(seg, "allocated_size", path)?
                .unwrap_or(allocated),
            active_size: self.opt_u64(seg, "active_size", path)?.unwrap_or(active),
            requested_size: self
                .opt_u64(seg, "requested_size", path)?
                .unwrap_or(requested),
            stream: self.stream(seg, path)?,
            segment_type,
            pool_id,
            is_expandable: matches!(
                self.doc.get(seg, "is_expandable").map(|v| self.doc.view(v)),
                Some(View::Bool(true))
            ),
            frames,
            blocks,
        })
    }

    pub(super) fn block(
        &mut self,
        b: Value,
        expected_address: u64,
        path: &str,
    ) -> Result<Block, Error> {
        let size = self.u64(b, "size", path)?;
        let state = match self.opt_str(b, "state", path)?.as_deref() {
            Some("active_allocated") => BlockState::ActiveAllocated,
            // The docstring's name for it; accepted in case a writer followed the docs.
            Some("active_pending_free") | Some("active_awaiting_free") => {
                BlockState::ActivePendingFree
            }
            Some("inactive") => BlockState::Inactive,
            Some(other) => return Err(self.error(path, format!("unknown block state {other:?}"))),
            None => return Err(self.error(path, "missing key `state`")),
        };
        let address = self
            .opt_u64(b, "address", path)?
            .unwrap_or(expected_address);
        let (requested_size, frames) = match self.doc.get(b, "history") {
            // Pre-2.0 blocks: `history: [{real_size, frames}]`, newest last.
            Some(history) if self.doc.get(b, "requested_size").is_none() => {
                match self.list(history, path)?.last() {
                    Some(h) => (
                        self.opt_u64(*h, "real_size", path)?.unwrap_or(0),
                        self.frames_of(*h, path)?.unwrap_or_default(),
                    ),
                    None => (0, StackId::default()),
                }
            }
            _ => (
                self.opt_u64(b, "requested_size", path)?.unwrap_or(0),
                self.frames_of(b, path)?.unwrap_or_default(),
            ),
        };
        Ok(Block {
            address,
            size,
            requested_size,
            state,
            frames,
        })
    }

    /// One pass over the entry's keys (a trace holds millions of entries); a key set twice
    /// counts as its last setting, as [`Doc::get`] reads it.
    pub(super) fn trace_entry(&mut self, e: Value, path: &str) -> Result<TraceEntry, Error> {
        if self.doc.is_released(e) {
            return Err(self.released(path));
        }
        let View::Dict(entries) = self.doc.view(e) else {
            return Err(self.error(
                path,
                format!(
                    "expected a dict, found {}",
                    self.doc.view(e).type_with_article()
                ),
            ));
        };
        let mut action = None;
        let mut frames = None;
        let mut entry = TraceEntry {
            action: TraceAction::Other(String::new()),
            addr: 0,
            size: 0,
            stream: 0,
            time_us: None,
            device_free: None,
            frames: None,
        };
        for (k, v) in entries {
            let View::Str(key) = self.doc.view(*k) else {
                continue;
            };
            let value = self.doc.view(*v);
            let int = |key: &str| match value {
                View::None => Ok(None),
                View::Int(n) => Ok(Some(n)),
                View::Bool(b) => Ok(Some(b as i64)),
                other => Err(self.error(
                    path,
                    format!(
                        "`{key}` should be an int, found {}",
                        other.type_with_article()
                    ),
                )),
            };
            let unsigned = |key: &str| match int(key)? {
                Some(n) => u64::try_from(n)
                    .map(Some)
                    .map_err(|_| self.error(path, format!("`{key}` is negative ({n})"))),
                None => Ok(None),
            };
            match key {
                "action" => action = Some(*v),
                "addr" => entry.addr = unsigned(key)?.unwrap_or(0),
                "size" => entry.size = unsigned(key)?.unwrap_or(0),
                // Raw stream value: `int64(cudaStream_t)`, kept bit for bit.
                "stream" => entry.stream = int(key)?.unwrap_or(0) as u64,
                "time_us" => entry.time_us = int(key)?,
                "device_free" => entry.device_free = unsigned(key)?,
                "frames" => frames = Some(*v),
                _ => {}
            }
        }
        entry.action = match action.map(|a| self.doc.view(a)) {
            Some(View::Str(s)) => {
                let action = TraceAction::parse(s);
                if let TraceAction::Other(name) = &action {
                    self.charge(name.len() as u64, path)?;
                }
                action
            }
            Some(other) => {
                return Err(self.error(
                    path,
                    format!(
                        "`action` should be a str, found {}",
                        other.type_with_article()
                    ),
                ));
            }
            None => return Err(self.error(path, "missing key `action`")),
        };
        if let Some(list) = frames {
            entry.frames = Some(self.stack_of(list, path)?);
        }
        Ok(entry)
    }

    pub(super) fn settings(&mut self, s: Value) -> Result<AllocatorSettings, Error> {
        let path = "allocator_settings";
        let mut divisions = [0u64; 16];
        if let Some(d) = self.doc.get(s, "roundup_power2_divisions")
            && let View::Dict(entries) = self.doc.view(d)
        {
            for (k, v) in entries {
                let View::Str(key) = self.doc.view(*k) else {
                    continue;
                };
                let Ok(mib) = key.parse::<u64>() else {
                    continue;
                };
                if mib.is_power_of_two() && mib.ilog2() < 16 {
                    divisions[mib.ilog2() as usize] = self.as_int(*v, path, key)?.max(0) as u64;
                }
            }
        }
        let threshold = match self
            .doc
            .get(s, "garbage_collection_threshold")
            .map(|v| self.doc.view(v))
        {
            Some(View::Float(x)) => x,
            Some(View::Int(n)) => n as f64,
            _ => 0.0,
        };
        Ok(AllocatorSettings {
            alloc_conf: self
                .opt_shared_str(s, "PYTORCH_CUDA_ALLOC_CONF", path)?
                .unwrap_or_default(),
            max_split_size: self
                .opt_int(s, "max_split_size", path)?
                .and_then(|n| u64::try_from(n).ok()),
            garbage_collection_threshold: threshold,
            expandable_segments: matches!(
                self.doc
                    .get(s, "expandable_segments")
                    .map(|v| self.doc.view(v)),
                Some(View::Bool(true))
            ),
            roundup_power2_divisions: divisions,
        })
    }
}
