//! Frame lists → interned stacks: each shared list and frame dict is converted once.

use super::*;

impl Converter<'_, '_> {
    /// The `frames` of a dict as a stack; `None` when the key is absent.
    pub(super) fn frames_of(&mut self, dict: Value, path: &str) -> Result<Option<StackId>, Error> {
        match self.doc.get(dict, "frames") {
            Some(list) => self.stack_of(list, path).map(Some),
            None => Ok(None),
        }
    }

    /// A list of frame dicts as a stack. Each list is converted once (snapshots share one
    /// list between the entries of one traceback), each frame dict once.
    pub(super) fn stack_of(&mut self, list: Value, path: &str) -> Result<StackId, Error> {
        let slot = self.doc.seq_slot(list);
        if let Some(known) = slot.and_then(|i| self.state.stack_of_list.get(i))
            && *known != 0
        {
            return Ok(StackId(*known - 1));
        }
        let items = self.list(list, path)?;
        let mut key = std::mem::take(&mut self.state.scratch);
        key.clear();
        for item in items {
            let slot = self
                .doc
                .dict_slot(*item)
                .ok_or_else(|| self.error(path, "a frame is not a dict"))?;
            if slot >= self.state.frame_of_dict.len() {
                self.state
                    .frame_of_dict
                    .resize(self.doc.dict_count(), u32::MAX);
            }
            let mut id = self
                .state
                .frame_of_dict
                .get(slot)
                .copied()
                .unwrap_or(u32::MAX);
            if id == u32::MAX {
                let frame = Frame {
                    file: self
                        .opt_shared_str(*item, "filename", path)?
                        .unwrap_or_default(),
                    line: self
                        .opt_int(*item, "line", path)?
                        .unwrap_or(0)
                        .clamp(0, u32::MAX as i64) as u32,
                    name: self
                        .opt_shared_str(*item, "name", path)?
                        .unwrap_or_default(),
                };
                id = self.state.frames.len() as u32;
                self.state.frames.push(frame);
                if let Some(cell) = self.state.frame_of_dict.get_mut(slot) {
                    *cell = id;
                }
            }
            key.push(id);
        }
        let stack = match self.state.stack_ids.get(&key) {
            Some(id) => *id,
            None => {
                let frames: Vec<Frame> = key
                    .iter()
                    .filter_map(|id| self.state.frames.get(*id as usize).cloned())
                    .collect();
                // The frames' strings are shared and were charged when first read; the
                // table keeps each stack twice (in order and as its lookup key).
                let bytes = (2 * frames.len() * std::mem::size_of::<Frame>()) as u64;
                self.charge(bytes, path)?;
                let id = self.state.stacks.intern(frames);
                self.state.stack_ids.insert(key.clone(), id);
                id
            }
        };
        self.state.scratch = key;
        if let Some(i) = slot {
            if i >= self.state.stack_of_list.len() {
                self.state.stack_of_list.resize(self.doc.seq_count(), 0);
            }
            if let Some(cell) = self.state.stack_of_list.get_mut(i) {
                *cell = stack.0.saturating_add(1);
            }
        }
        Ok(stack)
    }
}
