package org.rubbo.interop;

import java.io.Serializable;
import java.util.Objects;

public class Address implements Serializable {
    private String city;
    private String street;
    private int zip;

    public Address() {}
    public Address(String city, String street, int zip) { this.city = city; this.street = street; this.zip = zip; }
    public String getCity() { return city; }
    public void setCity(String city) { this.city = city; }
    public String getStreet() { return street; }
    public void setStreet(String street) { this.street = street; }
    public int getZip() { return zip; }
    public void setZip(int zip) { this.zip = zip; }

    @Override public boolean equals(Object o) {
        if (!(o instanceof Address)) return false;
        Address a = (Address) o;
        return Objects.equals(city, a.city) && Objects.equals(street, a.street) && zip == a.zip;
    }
    @Override public int hashCode() { return Objects.hash(city, street, zip); }
    @Override public String toString() { return "Address{" + city + "," + street + "," + zip + "}"; }
}
