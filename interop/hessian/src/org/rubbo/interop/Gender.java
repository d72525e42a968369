package org.rubbo.interop;

public enum Gender { MALE, FEMALE }
