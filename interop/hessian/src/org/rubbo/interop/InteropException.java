package org.rubbo.interop;

public class InteropException extends Exception {
    public InteropException() { super(); }
    public InteropException(String message) { super(message); }
}
