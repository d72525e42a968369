package org.rubbo.interop;

import java.io.Serializable;
import java.math.BigDecimal;
import java.util.Date;
import java.util.List;
import java.util.Map;
import java.util.Objects;

public class User implements Serializable {
    private long id;
    private String name;
    private int age;
    private Gender gender;
    private Address address;
    private List<String> tags;
    private Map<String, String> props;
    private Date createdAt;
    private BigDecimal balance;

    public User() {}
    public long getId() { return id; }
    public void setId(long id) { this.id = id; }
    public String getName() { return name; }
    public void setName(String name) { this.name = name; }
    public int getAge() { return age; }
    public void setAge(int age) { this.age = age; }
    public Gender getGender() { return gender; }
    public void setGender(Gender gender) { this.gender = gender; }
    public Address getAddress() { return address; }
    public void setAddress(Address address) { this.address = address; }
    public List<String> getTags() { return tags; }
    public void setTags(List<String> tags) { this.tags = tags; }
    public Map<String, String> getProps() { return props; }
    public void setProps(Map<String, String> props) { this.props = props; }
    public Date getCreatedAt() { return createdAt; }
    public void setCreatedAt(Date createdAt) { this.createdAt = createdAt; }
    public BigDecimal getBalance() { return balance; }
    public void setBalance(BigDecimal balance) { this.balance = balance; }

    @Override public boolean equals(Object o) {
        if (!(o instanceof User)) return false;
        User u = (User) o;
        return id == u.id && age == u.age && Objects.equals(name, u.name) && gender == u.gender
            && Objects.equals(address, u.address) && Objects.equals(tags, u.tags)
            && Objects.equals(props, u.props) && Objects.equals(createdAt, u.createdAt)
            && Objects.equals(balance, u.balance);
    }
    @Override public int hashCode() { return Objects.hash(id, name); }
    @Override public String toString() {
        return "User{" + id + "," + name + "," + age + "," + gender + "," + address + "," + tags + ","
            + props + "," + (createdAt == null ? null : createdAt.getTime()) + "," + balance + "}";
    }
}
