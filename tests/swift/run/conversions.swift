trace(toInt("12") + 1, toFloat("0.5") + 1.0, fromInt(5) + "!", itof(3) / 2.0, toString(9));
