package org.rubbo.interop;

import java.io.Serializable;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Date;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/** Contract POJO (field names and types are on the wire). */
public class User implements Serializable {
    private static final long serialVersionUID = 1L;

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

    /** User {@code i} exactly as the contract's listUsers formula defines it. */
    public static User contractUser(int i) {
        User u = new User();
        u.setId(i);
        u.setName("user-" + i);
        u.setAge(20 + i % 50);
        u.setGender(i % 2 == 0 ? Gender.MALE : Gender.FEMALE);
        Address a = new Address();
        a.setCity("city-" + i);
        u.setAddress(a);
        List<String> tags = new ArrayList<>();
        tags.add("t" + i);
        u.setTags(tags);
        Map<String, String> props = new HashMap<>();
        props.put("k", "v" + i);
        u.setProps(props);
        u.setCreatedAt(new Date(1700000000000L + i));
        u.setBalance(new BigDecimal(i + ".50"));
        return u;
    }

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

    @Override
    public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof User)) return false;
        User u = (User) o;
        return id == u.id
                && age == u.age
                && Objects.equals(name, u.name)
                && gender == u.gender
                && Objects.equals(address, u.address)
                && Objects.equals(tags, u.tags)
                && Objects.equals(props, u.props)
                && Objects.equals(createdAt, u.createdAt)
                && Objects.equals(balance, u.balance);
    }

    @Override
    public int hashCode() { return Objects.hash(id, name, age, gender, address, tags, props, createdAt, balance); }

    @Override
    public String toString() {
        return "User{id=" + id + ", name=" + name + ", age=" + age + ", gender=" + gender
                + ", address=" + address + ", tags=" + tags + ", props=" + props
                + ", createdAt=" + (createdAt == null ? null : createdAt.getTime())
                + ", balance=" + balance + "}";
    }
}
