#[derive(serde::Serialize, serde::Deserialize)]
pub struct Plain {
    pub x: i32,
}

#[rubbo::service(interface = "x.S")]
pub trait S {
    async fn take(&self, p: Plain) -> Result<i32, rubbo::RpcError>;
}

fn main() {}
