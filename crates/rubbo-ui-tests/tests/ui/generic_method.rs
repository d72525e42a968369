#[rubbo::service(interface = "x.S")]
pub trait S {
    async fn take<T>(&self, p: T) -> Result<i32, rubbo::RpcError>;
    type Assoc;
}

fn main() {}
