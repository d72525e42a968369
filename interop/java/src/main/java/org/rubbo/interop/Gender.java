package org.rubbo.interop;

/** Contract enum; hessian writes it as an object with a single {@code name} field. */
public enum Gender {
    MALE,
    FEMALE
}
