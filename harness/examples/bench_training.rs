//! Throughput of the workload model on a training loop: a small MLP with Adam for 10,000
//! iterations. Prints iterations per second (a development figure; not deterministic).
fn main() {
    let text = r#"name: bench_training
device: h100-80gb
python: "3.11"
workload: |
  model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).cuda()
  opt = torch.optim.Adam(model.parameters(), lr=1e-3)
  loss_fn = torch.nn.MSELoss()
  for i in range(10000):
      x = torch.randn(64, 256, device="cuda")
      target = torch.randn(64, 10, device="cuda")
      loss = loss_fn(model(x), target)
      opt.zero_grad()
      loss.backward()
      opt.step()
"#;
    let scenario = match gpumem_harness::scenario::parse(text, "bench_training.yaml") {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    for variant in scenario.variants() {
        let start = std::time::Instant::now();
        match gpumem_harness::run::run_variant(&scenario, &variant) {
            Ok(_) => {
                let secs = start.elapsed().as_secs_f64();
                println!(
                    "training loop (MLP + Adam): 10000 iterations in {secs:.2} s, {:.0} iterations/s",
                    10000.0 / secs
                );
            }
            Err(e) => eprintln!("{e}"),
        }
    }
}
