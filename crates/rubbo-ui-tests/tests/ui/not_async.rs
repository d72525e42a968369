#[rubbo::service(interface = "x.S")]
pub trait S {
    fn echo(&self, s: String) -> Result<String, rubbo::RpcError>;
}

fn main() {}
