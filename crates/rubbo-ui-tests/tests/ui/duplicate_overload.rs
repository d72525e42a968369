#[rubbo::service(interface = "x.S")]
pub trait S {
    async fn add(&self, a: i32) -> Result<i32, rubbo::RpcError>;
    #[rubbo(name = "add")]
    async fn add_again(&self, b: i32) -> Result<i32, rubbo::RpcError>;
}

fn main() {}
