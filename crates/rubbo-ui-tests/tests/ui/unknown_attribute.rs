#[rubbo::service(interface = "x.S")]
pub trait S {
    #[rubbo(nmae = "x")]
    async fn echo(&self, #[rubbo(jvm = "I")] v: i32) -> Result<i32, rubbo::RpcError>;
}

fn main() {}
