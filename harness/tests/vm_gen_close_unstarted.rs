//! An explicit `close()` of an unstarted generator: on 3.12 and 3.13 `gen_close` marks it
//! finished and leaves its frame (the arguments) to the generator's deallocation, so an
//! argument outlives `close()` and a cycle through the frame is left to the collector
//! (`gc.collect()` counts 3: generator, list, box); 3.8 – 3.11 and 3.14+ release the frame
//! at `close()` (count 0). Measured with `python vm_gen_close_unstarted.py` on pyenv 3.8.18,
//! 3.9.18, 3.10.13, 3.11.7, 3.12.1, 3.13.0 and fetched 3.14/3.15; checked here on the model
//! (3.10, 3.11, 3.12) and every installed CPython 3.8 – 3.13 (the script asserts).

#[allow(dead_code)] // this file uses `agrees_with_cpython`
mod probes;

const CLOSE: &str = include_str!("vm_gen_close_unstarted.py");

#[test]
fn close_of_unstarted_generator_keeps_frame_on_3_12_and_3_13() {
    probes::agrees_with_cpython("", 13, CLOSE);
}
