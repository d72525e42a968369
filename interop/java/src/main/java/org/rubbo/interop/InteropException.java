package org.rubbo.interop;

/** Thrown by {@link InteropService#fail(String)}; consumers must see message and class name. */
public class InteropException extends Exception {
    private static final long serialVersionUID = 1L;

    public InteropException(String message) {
        super(message);
    }
}
