#[derive(serde::Serialize, rubbo::JavaType)]
pub struct Plain {
    pub x: i32,
}

#[derive(serde::Serialize, rubbo::JavaType)]
#[java(class = "com/example/Bad;")]
pub struct Slashes {
    pub x: i32,
}

fn main() {}
