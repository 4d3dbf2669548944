struct Calculator;

impl Calculator {
    /// Adds.
    #[oxydra::tool(read_only)]
    async fn add(&self, a: i64) -> Result<String, String> {
        Ok(a.to_string())
    }
}

fn main() {}
