#[rubbo::service(interface = "x.S")]
pub trait S {
    async fn plain(&self) -> String;
    async fn wrong_error(&self) -> Result<String, std::io::Error>;
    async fn nothing(&self);
}

fn main() {}
