package org.rubbo.interop;

import java.io.Serializable;
import java.util.Objects;

/** Contract POJO: {@code String city, String street, int zip}. */
public class Address implements Serializable {
    private static final long serialVersionUID = 1L;

    private String city;
    private String street;
    private int zip;

    public Address() {}

    public Address(String city, String street, int zip) {
        this.city = city;
        this.street = street;
        this.zip = zip;
    }

    public String getCity() { return city; }

    public void setCity(String city) { this.city = city; }

    public String getStreet() { return street; }

    public void setStreet(String street) { this.street = street; }

    public int getZip() { return zip; }

    public void setZip(int zip) { this.zip = zip; }

    @Override
    public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof Address)) return false;
        Address a = (Address) o;
        return zip == a.zip && Objects.equals(city, a.city) && Objects.equals(street, a.street);
    }

    @Override
    public int hashCode() { return Objects.hash(city, street, zip); }

    @Override
    public String toString() {
        return "Address{city=" + city + ", street=" + street + ", zip=" + zip + "}";
    }
}
